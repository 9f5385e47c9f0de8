"""A stream cut as the seam cuts, and kept whole in the artifact store as it arrives.

:class:`CapStream` wraps a :class:`~._stream.StreamCutter` (which does no I/O)
with the spill: the full stream goes to an artifact writer as it arrives
(hashed as it goes), opened only once the stream is known to be cut (or
binary), and committed only then. :class:`StreamOutcome` is what it became.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .._diagnostics import observe
from .._notice import Cap, failure_reason, logger, notice_line
from ..core._cut import CapResult
from ..protocols import ArtifactStreamWriter, CountingStreamWriter, takes_newlines
from ._stream import StreamCutter

__all__ = ["CapStream", "StreamOutcome", "StreamWriter"]


#: What :class:`CapStream` needs of an artifact writer (``ArtifactStore.open_writer()``).
StreamWriter = ArtifactStreamWriter


@dataclass(frozen=True)
class StreamOutcome:
    """What a stream became.

    Attributes:
        passthrough: the input itself, byte for byte, when nothing was cut.
        result: the cut, when something was (``result.text`` is what to deliver).
        capped_by: which cap cut it, as the finalizer names it.
        original_bytes: the length of the input.
        reference: the artifact holding the full input, if it was kept.
        not_kept: why the full input could not be kept, when it could not.
    """

    passthrough: bytes | None
    result: CapResult | None
    capped_by: Cap | None
    original_bytes: int
    reference: str | None = None
    not_kept: str | None = None

    @property
    def truncated(self) -> bool:
        """Whether a cap changed the stream."""
        return self.result is not None

    @property
    def output(self) -> bytes:
        """The bytes to deliver: the input unchanged, or the cut text in UTF-8."""
        if self.result is None:
            return self.passthrough or b""
        return self.result.text.encode("utf-8")

    def notice(self, tool: str) -> str | None:
        """The finalizer's notice line for this outcome, or ``None`` when nothing was cut."""
        if self.result is None or self.capped_by is None:
            return None
        # The line naming a binary stream is not content of it: none of it was sent.
        sent = 0 if self.capped_by == "binary" else self.result.kept_bytes
        return notice_line(tool, sent, self.original_bytes, self.capped_by,
                           not_kept=self.not_kept)


class CapStream:
    """A :class:`StreamCutter` that also keeps the full stream in an artifact store.

    Args:
        cutter: how to cut.
        open_writer: opens an artifact writer (or returns ``None`` when there is no
            store); ``None`` to keep nothing. It is called only once the stream is
            known to be cut, and then gets every byte of the stream from the first
            one; its ``commit`` gives the same reference a one-shot ``put`` of the
            whole stream would.
        tool: the tool's name, for the log record of a store failure.
    """

    def __init__(
        self,
        cutter: StreamCutter,
        open_writer: Callable[[], StreamWriter | None] | None = None,
        *,
        tool: str | None = None,
    ) -> None:
        self.cutter = cutter
        self._open_writer = open_writer
        self._writer: StreamWriter | None = None
        self._counted: CountingStreamWriter | None = None  # the writer, when it takes counts
        self._tool = tool
        self.not_kept: str | None = None
        # An unlimited stream's chunks while its first bytes decide whether it is binary.
        self._pending: list[bytes] = []

    @property
    def passthrough(self) -> bool:
        """No limit applies: the caller writes chunks out as they come (nothing is held).

        With ``name_binary`` it turns true only once the first bytes showed text:
        then :meth:`release` gives what was held meanwhile, to write first.
        """
        cutter = self.cutter
        return cutter.unlimited and not cutter.deciding and not cutter.binary

    def release(self) -> bytes:
        """The first bytes held while deciding whether an unlimited stream is binary,
        once they showed text (then :attr:`passthrough` is true); each given out once."""
        if not self.passthrough or not self._pending:
            return b""
        pending, self._pending = self._pending, []
        return b"".join(pending)

    def write(self, chunk: bytes) -> None:
        """Take the next bytes of the stream (kept by reference: a buffer is copied)."""
        if not isinstance(chunk, bytes):
            chunk = bytes(chunk)  # the spill may still hold it after this returns
        cutter = self.cutter
        if (
            self._writer is None
            and self._open_writer is not None
            and cutter.limit is not None
            and cutter.total <= cutter.limit < cutter.total + len(chunk)
        ):
            # This chunk makes it sure to be cut: start the artifact with what came before.
            self._start(cutter.held)
        # Counted once, here, when the spill's line index needs the count anyway.
        newlines = chunk.count(b"\n") if self._writer and self._counted else None
        self._spill(chunk, newlines)
        if cutter.deciding:
            self._pending.append(chunk)
        deciding = cutter.binary is None and self._open_writer is not None
        prefix = cutter.sniffed if deciding else b""
        cutter.feed(chunk, newlines)
        if cutter.binary:
            self._pending = []
        if deciding and cutter.binary and self._writer is None:
            # Binary is kept whatever its size: start the artifact with what came before.
            self._start(prefix)
            self._spill(chunk)

    def close(self) -> StreamOutcome:
        """End of stream: commit the artifact if the stream was cut, and cut it."""
        cutter = self.cutter
        held = b"".join(self._pending) if cutter.deciding else cutter.held
        cut, cap = cutter.close()
        if not cut or cap is None:
            if self._writer is not None:  # pragma: no cover - a cut stream always has a cap
                self._writer.abort()
            return StreamOutcome(held, None, None, cutter.total)
        if self._writer is None and self._open_writer is not None:
            # Short enough to be held, but cut all the same (binary, or invalid bytes
            # grew in decoding).
            self._start(cutter.sniffed if cap == "binary" else held)
        kept = self._writer is not None
        reference = self._commit()
        result, capped_by = cutter.result(cap, reference, tried=kept or bool(self.not_kept))
        artifacts = (reference,) if reference else ()
        if kept or self.not_kept:  # a hand-over to the store was tried
            observe("spill", "stream", None, size=cutter.total, tool=self._tool,
                    artifacts=artifacts, changed=False)
        observe(str(capped_by), "stream_text", result.text, tool=self._tool,
                artifacts=artifacts, changed=True)
        return StreamOutcome(None, result, capped_by, cutter.total, reference, self.not_kept)

    def abort(self) -> None:
        """Give up: discard the artifact being written, if any."""
        if self._writer is not None:
            self._writer.abort()
            self._writer = None

    def _start(self, prefix: bytes) -> None:
        opener, self._open_writer = self._open_writer, None  # opened at most once
        assert opener is not None
        try:
            writer = self._writer = opener()
            # A writer that takes the count of line breaks: the stream counts them for it.
            self._counted = writer if writer is not None and takes_newlines(writer) else None
        except Exception as error:  # any store failure: deliver bounded, say why
            self._failed(error)
            return
        self._spill(prefix)

    def _spill(self, chunk: bytes, newlines: int | None = None) -> None:
        if self._writer is None or not chunk:
            return
        try:
            if newlines is not None and self._counted is not None:
                self._counted.write(chunk, newlines)
            else:
                self._writer.write(chunk)
        except Exception as error:
            self._writer.abort()
            self._writer = None
            self._failed(error)

    def _commit(self) -> str | None:
        if self._writer is None:
            return None
        writer, self._writer = self._writer, None
        try:
            return writer.commit()
        except Exception as error:
            writer.abort()
            self._failed(error)
            return None

    def _failed(self, error: BaseException) -> None:
        self.not_kept = failure_reason(error)
        logger.warning("could not keep the full output of %s: %s", self._tool or "a tool",
                       self.not_kept)
