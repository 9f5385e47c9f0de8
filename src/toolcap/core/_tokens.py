"""Tokens: the ``"25k tokens"`` spelling, the choice of measure, and the estimate.

Pure: the real tokenizer is loaded by the seam (:mod:`toolcap._tokenizer`) and
handed in as a :class:`toolcap.protocols.TokenCounter`; what is here is only
what needs no vocabulary.

**Spelling.** A number of tokens is a whole or decimal number, an optional
``k`` (1,000) or ``M`` (1,000,000), case-insensitive, then ``tokens`` (or
``token``), spaces optional: ``"25k tokens"``, ``"1.5M tokens"``,
``"800 tokens"``. Model windows are quoted that way, so ``k`` is 1,000 here
where a size's ``KB`` is 1,024.

**Measure.** ``"bytes"`` (UTF-8 bytes, exact, the default) or ``"tokens"``. An
amount in the other unit is converted only from tokens to bytes, at
:data:`BYTES_PER_TOKEN` (which errs on the tight side for prose and code); a
byte size where tokens are measured is refused, since no fixed rate converts it
safely.

**Estimate.** :func:`estimate_tokens` counts tokens without a vocabulary, as
o200k_base would within a few percent on English text and code, CJK text, JSON
and base64 (the four corpora of ``tests/data/tokens``, where the test and
``benchmarks/bench_tokens.py`` hold it to :data:`ESTIMATE_BOUND`). It classifies
every UTF-8 byte with one ``bytes.translate`` and counts the classes, and the
changes between them, with ``bytes.count``: linear, no regular expression, no
Python loop over characters.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from ._errors import ConfigError
from ._sizes import parse_size

__all__ = [
    "BYTES_PER_TOKEN",
    "ESTIMATE_BOUND",
    "MEASURES",
    "check_measure",
    "estimate_tokens",
    "human_tokens",
    "parse_amount",
    "token_pieces",
    "tokens_spelled",
]

#: Bytes a token counts for where a number of tokens must become bytes (a window in
#: tokens, a reported usage, under ``measure = "bytes"``): prose and code run
#: 3.4-4.5 bytes a token, so 3 errs on the tight side for them (not for JSON at
#: 2.4-2.9, nor base64 at 1.5: count those in tokens).
BYTES_PER_TOKEN = 3

#: The units a conversation's tool outputs can be measured in.
MEASURES = ("bytes", "tokens")

#: The estimate's documented bound: its error against o200k_base on each of the
#: four calibration corpora is within this share.
ESTIMATE_BOUND = 0.05

# Bounded pieces, anchored: a linear match on any input.
_TOKENS = re.compile(
    r"\s{0,8}([0-9]{1,12}(?:\.[0-9]{1,6})?)\s{0,8}([kKmM]?)\s{0,8}tokens?\s{0,8}\Z", re.IGNORECASE)
_SCALE = {"": 1, "k": 1000, "m": 1000**2}
_LONGEST = 64


def check_measure(value: object, *, key: str = "measure", file: str | None = None) -> str:
    """``value`` if it is ``"bytes"`` or ``"tokens"``, else a one-line :class:`ConfigError`."""
    if isinstance(value, str) and value in MEASURES:
        return value
    raise ConfigError(f"{value!r} is not a measure: write \"bytes\" or \"tokens\"",
                      key=key, file=file)


def tokens_spelled(value: object, *, key: str | None = None,
                   file: str | None = None) -> int | None:
    """The number of tokens ``value`` spells (``"25k tokens"`` → 25000), or ``None``
    when it is not spelled in tokens at all (a size, a number).

    A text that names tokens but is not in the grammar (``"25kb tokens"``,
    ``"-3 tokens"``, ``"tokens"``) is a one-line :class:`ConfigError`.
    """
    if not isinstance(value, str) or "token" not in value.lower():
        return None
    found = _TOKENS.match(value) if len(value) <= _LONGEST else None
    if found is None:
        raise ConfigError(
            f"invalid number of tokens {value[:_LONGEST]!r}: write a number, an optional"
            " k (1,000) or M (1,000,000), then 'tokens' (e.g. '25k tokens')", key=key, file=file)
    return int(Decimal(found.group(1)) * _SCALE[found.group(2).lower()])


def parse_amount(value: object, *, key: str, file: str | None = None,
                 measure: str = "bytes") -> int:
    """An amount in ``measure``'s unit: a size (``"800KB"``), tokens (``"200k tokens"``),
    or a bare whole number, counted in that unit.

    Tokens become bytes at :data:`BYTES_PER_TOKEN` under ``"bytes"``; a size is
    refused under ``"tokens"`` (one line, with the spelling to use instead).
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError(f"{value!r} is not a size or a number of tokens", key=key, file=file)
    tokens = tokens_spelled(value, key=key, file=file)
    if measure == "tokens":
        if tokens is not None:
            return tokens
        if isinstance(value, int):
            return parse_size(value, key=key, file=file)
        if value.strip().isdigit():
            return parse_size(value.strip(), key=key, file=file)
        parse_size(value, key=key, file=file)  # a malformed size gets the size's own error
        raise ConfigError(f"{value!r} is in bytes, but the measure is tokens: write a number"
                          " of tokens (e.g. '25k tokens')", key=key, file=file)
    if tokens is not None:
        return tokens * BYTES_PER_TOKEN
    return parse_size(value, key=key, file=file)


def human_tokens(n: int) -> str:
    """A number of tokens as a person reads it: ``"812 tokens"``, ``"25.3k tokens"``,
    ``"1.2M tokens"`` (tenths truncated, like :func:`toolcap.human_size`)."""
    if n < 1000:
        return f"{n} tokens"
    tenths, unit = (n // 100_000, "M") if n >= 1000**2 else (n // 100, "k")
    return f"{tenths // 10}.{tenths % 10}{unit} tokens"


def token_pieces(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, each cut just after the last
    line break (else space) in its second half when there is one.

    A tokenizer counts each piece on its own: its work and memory stay bounded
    whatever the text (a tokenizer's pre-split can take time quadratic in a long
    run, or overflow its stack), and a cut at a break rarely splits a token.
    """
    if len(text) <= size:
        return [text]
    pieces = []
    start = 0
    while len(text) - start > size:
        end = start + size
        middle = start + size // 2
        cut = text.rfind("\n", middle, end)
        if cut < 0:
            cut = text.rfind(" ", middle, end)
        end = cut + 1 if cut >= 0 else end
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


# -- the estimate ---------------------------------------------------------------------


def _class_of(byte: int) -> str:
    """The class letter of a UTF-8 byte: l/u lower and upper case ASCII letter, d digit,
    s space or tab, n line break, p other ASCII, c continuation byte, 2/3/4 the
    first byte of a character of that many bytes."""
    char = chr(byte)
    if byte >= 0x80:
        return "c" if byte < 0xC0 else "2" if byte < 0xE0 else "3" if byte < 0xF0 else "4"
    if char.isalpha():
        return "l" if char.islower() else "u"
    if char.isdigit():
        return "d"
    return "s" if char in " \t" else "n" if char in "\r\n" else "p"


_CLASSES = "".join(_class_of(byte) for byte in range(256)).encode("ascii")

# Tokens per occurrence, fitted (least squares on relative error) on o200k_base's
# counts of 1.5 KB pieces of the four corpora. Letters are cheap inside words: a
# word starting after a space or punctuation, and every change between lower
# case, upper case and digit (random text: base64, ids), is what costs. The
# two- and four-byte weights were set from small samples (Cyrillic and accented
# Latin prose; emoji), not from the four corpora.
_WEIGHTS: tuple[tuple[bytes, float], ...] = (
    (b"l", 0.176), (b"u", 0.176), (b"d", 0.666), (b"s", 0.155), (b"n", 0.399),
    (b"p", 0.435), (b"2", 0.3), (b"3", 0.746), (b"4", 1.75),
    (b"lu", 0.734), (b"ul", 0.734), (b"ld", 0.734), (b"dl", 0.734), (b"ud", 0.734),
    (b"du", 0.734),
    (b"sl", 0.26), (b"su", 0.26), (b"pl", 0.26),
)
# Encoded and classified a slice at a time, so the copies stay small for a huge text.
_SLICE = 1 << 20


def estimate_tokens(text: str) -> int:
    """About how many o200k_base tokens ``text`` is, without a vocabulary.

    Within :data:`ESTIMATE_BOUND` of the real count on English text and code, CJK
    text, JSON and base64 (the calibration corpora); other text is looser
    (Python source about +10%, hex digits about +45%). At least 1 for a text
    that is not empty; linear time, memory bounded by a slice of the text.
    """
    if not text:
        return 0
    total = 0.0
    for start in range(0, len(text), _SLICE):
        # A pair split between two slices is lost: a few tokens in a megabyte.
        classes = text[start:start + _SLICE].encode("utf-8", "surrogatepass").translate(_CLASSES)
        total += sum(classes.count(pattern) * weight for pattern, weight in _WEIGHTS)
    return max(1, math.ceil(total))
