"""The pluggable parts of toolcap, declared as Protocols.

Anything with these methods plugs in; nothing needs to inherit from toolcap.
The stores of :mod:`toolcap.store` implement all of them; a store of your own
implements the ones the parts it is given to use:

- the finalizer (``Policy(sink=...)``) needs an :class:`ArtifactSink`;
- streaming (``toolcap run``, ``cap`` on a stream) needs a
  :class:`StreamingArtifactSink`, else it keeps nothing of a stream;
- the MCP proxy's ``read_artifact`` tool needs an :class:`ArtifactReader`;
- ``measure="tokens"`` counts with a :class:`TokenCounter` (any ``str -> int``
  callable: o200k_base when ``toolcap[tokens]`` is installed, else an estimate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    from .store._records import ArtifactInfo, GrepResult

__all__ = [
    "ArtifactReader",
    "ArtifactSink",
    "ArtifactStreamWriter",
    "CountingStreamWriter",
    "StreamingArtifactSink",
    "TokenCounter",
    "takes_newlines",
]


@runtime_checkable
class ArtifactSink(Protocol):
    """Where the finalizer keeps the full original of a response it cuts.

    ``put`` stores ``data`` (the exact bytes of the original; for text, its UTF-8
    encoding) and returns its reference, ``"toolcap:"`` followed by lowercase hex
    digits of its SHA-256. The same bytes must give the same reference. On any
    failure it raises; the finalizer then delivers the bounded response without a
    reference and says so in the notice. It is called at most once per response.
    """

    def put(self, data: bytes, *, tool: str | None = None) -> str: ...


class ArtifactStreamWriter(Protocol):
    """One artifact written in chunks, as a stream arrives.

    ``write`` appends a chunk; ``commit`` stores what was written and returns the
    reference ``put`` would give for the concatenated chunks; ``abort`` discards
    everything and is idempotent. Nothing written is visible before ``commit``.
    ``write`` and ``commit`` raise :class:`toolcap.StoreError` on failure.
    """

    def write(self, chunk: bytes) -> None: ...
    def commit(self) -> str: ...
    def abort(self) -> None: ...


class CountingStreamWriter(ArtifactStreamWriter, Protocol):
    """An :class:`ArtifactStreamWriter` that also takes each chunk's count of line breaks.

    A stream that counts them anyway (``keep_lines`` numbers the lines it keeps)
    hands the count over, so that they are counted once: a writer that wants it
    (for a line index) says so with a ``wants_newlines`` attribute that is true,
    and is then called as ``write(chunk, newlines)``, ``newlines`` being the
    count of ``b"\\n"`` in ``chunk`` or ``None`` when the caller has none. Any
    other writer is called as ``write(chunk)``: the attribute is optional.
    """

    @property
    def wants_newlines(self) -> bool: ...
    def write(self, chunk: bytes, newlines: int | None = None) -> None: ...


def takes_newlines(writer: ArtifactStreamWriter) -> TypeGuard[CountingStreamWriter]:
    """Whether ``writer`` takes each chunk's count of line breaks (a
    :class:`CountingStreamWriter` whose ``wants_newlines`` is true)."""
    return getattr(writer, "wants_newlines", False) is True


@runtime_checkable
class StreamingArtifactSink(ArtifactSink, Protocol):
    """An :class:`ArtifactSink` that also takes content of any size in chunks.

    ``open_writer`` returns a fresh writer (or raises :class:`toolcap.StoreError`,
    whose message says why nothing can be kept).
    """

    def open_writer(self, *, tool: str | None = None) -> ArtifactStreamWriter: ...


@runtime_checkable
class ArtifactReader(Protocol):
    """Reads an artifact back by reference (a prefix of 16 hex digits or more).

    Each method raises :class:`toolcap.StoreError` (a subclass names an unknown
    or damaged artifact) with a one-line message. Lines are 1-based and
    inclusive; bytes that are not UTF-8 are read as U+FFFD.
    """

    def stat(self, ref: str) -> ArtifactInfo: ...
    def read_bytes(self, ref: str, offset: int = 0, length: int | None = None) -> bytes: ...
    def read_lines(self, ref: str, start: int = 1, end: int | None = None) -> list[str]: ...
    def grep(
        self,
        ref: str,
        pattern: str,
        *,
        context: int = 0,
        max_matches: int = 100,
        ignore_case: bool = False,
        fixed: bool = False,
        max_line_chars: int = 2000,
    ) -> GrepResult: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text: ``counter(text) -> int``.

    Any callable fits: ``lambda text: len(encoding.encode_ordinary(text))`` for a
    tiktoken encoding, a model provider's counter, or toolcap's own (see
    ``toolcap.token_counter``). It must take any ``str`` (lone surrogates
    included: toolcap repairs them first), return a whole number that is 0 only
    for an empty text, and raise nothing on hostile input.
    """

    def __call__(self, text: str, /) -> int: ...
