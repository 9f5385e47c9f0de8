"""Bound a stream of bytes of any length, holding only what the cut can need.

A cut is planned from the limit alone (:func:`toolcap.core._cut.plan_cut`), so a
stream needs to keep only the first ``plan.head + 1`` bytes, a ring of the last
``plan.tail`` bytes, and, while the stream is still short enough to be passed
through unchanged, the bytes seen so far (never more than the limit). What comes
out is exactly what :meth:`toolcap.Policy.finalize` gives for the same bytes as a
batch of one: the per-tool threshold first, then the batch ceiling, the marker
naming the artifact when the original was kept.

:class:`StreamCutter` does no I/O at all. :class:`CapStream` adds the spill: the
full stream goes to an artifact writer as it arrives (hashed as it goes), opened
only once the stream is known to be cut, and committed only then.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass

from .._diagnostics import observe
from .._notice import Cap, failure_reason, logger, notice_line
from ..core._cut import CapResult, CutPlan, Strategy, assemble, plan_cut
from ..core._jsoncut import cut_json
from ..core._jsondoc import MAX_STRUCTURAL_BYTES, Format
from ..core._marker import Marker
from ..core._sizes import Limit
from ..core._utf8 import decode
from ..protocols import ArtifactStreamWriter

__all__ = ["CapStream", "StreamCutter", "StreamOutcome", "StreamWriter"]


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
        return notice_line(tool, self.result.kept_bytes, self.original_bytes, self.capped_by,
                           not_kept=self.not_kept)


class StreamCutter:
    """Take a stream in chunks and cut it as ``Policy.finalize`` cuts the whole.

    Args:
        threshold: the tool's ``size_threshold`` (``None``: unlimited).
        ceiling: the batch ceiling (``None``: none), applied after the threshold.
        strategy, head_ratio, marker, snap_lines: as for :func:`toolcap.cap_text`.
        format: the tool's ``format``: unless ``"text"``, a stream that starts
            like a JSON object or array is held whole (up to
            ``MAX_STRUCTURAL_BYTES``, 64 MB) so that it can be cut by structure.

    Memory is bounded by the limits, whatever the length of the stream: the head
    and tail the widest possible plan needs, plus the stream itself only while it
    is no longer than the smaller limit, or while it may be a JSON document of
    at most 64 MB (larger documents are cut as text in every path).
    """

    def __init__(
        self,
        threshold: Limit,
        *,
        ceiling: Limit = None,
        strategy: Strategy = "head_tail",
        head_ratio: float = 0.2,
        marker: Marker | None = None,
        snap_lines: bool = True,
        format: Format = "auto",
    ) -> None:
        self.threshold = threshold
        self._format: Format = format
        self.ceiling = ceiling
        self._strategy: Strategy = strategy
        self._head_ratio = head_ratio
        self._marker = marker or Marker()
        self._snap = snap_lines
        limits = [limit for limit in (threshold, ceiling) if limit is not None]
        #: The stream is passed through unchanged only if it decodes to at most this.
        self.limit: Limit = min(limits) if limits else None
        # Keep what the widest plan can ask for: each limit, with or without a reference.
        plans = [self._plan(limit, stored) for limit in limits for stored in (False, True)]
        self._head_keep = max(plan.head for plan in plans) + 1 if plans else 0
        self._tail_keep = max((plan.tail for plan in plans), default=0)
        self._head = bytearray()
        self._tail = bytearray()
        self._whole: bytearray | None = bytearray() if limits else None
        # The stream while it may still be a JSON document to cut by structure.
        self._document: bytearray | None = (
            bytearray() if limits and format != "text" else None
        )
        self.total = 0
        # The threshold is compared with the *decoded* size (invalid bytes grow when
        # replaced); it matters only when the ceiling is the smaller limit and the
        # stream is not longer than the threshold, so count it only up to there.
        self._counting = (
            threshold is not None and ceiling is not None and ceiling < threshold
        )
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._decoded = 0
        self._closed = False

    def _plan(self, limit: int, stored: bool) -> CutPlan:
        return plan_cut(limit, strategy=self._strategy, head_ratio=self._head_ratio,
                        marker=self._marker, stored=stored)

    @property
    def unlimited(self) -> bool:
        """No limit at all: the stream passes through and nothing needs to be held."""
        return self.limit is None

    @property
    def held(self) -> bytes:
        """The stream so far, while it is held whole (empty once it is over the limit)."""
        return bytes(self._whole) if self._whole is not None else b""

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the stream."""
        if self._closed:
            raise ValueError("the stream is already closed")
        size = len(chunk)
        if not size or self.limit is None:
            self.total += size
            return
        if len(self._head) < self._head_keep:
            self._head += chunk[: self._head_keep - len(self._head)]
        self._keep_tail(chunk)
        if self._counting and self.total <= self.threshold:  # type: ignore[operator]
            piece = self._decoder.decode(chunk)
            self._decoded += len(piece) if piece.isascii() else len(piece.encode("utf-8"))
        self.total += size
        if self._document is not None:
            self._hold_document(chunk)
        if self._whole is not None:
            if self.total <= self.limit:
                self._whole += chunk
            else:
                self._whole = None

    def _hold_document(self, chunk: bytes) -> None:
        document = self._document
        assert document is not None
        if self.total > MAX_STRUCTURAL_BYTES:
            self._document = None
            return
        if not document.strip():
            start = chunk.lstrip(b" \t\r\n")[:1]
            if start and start not in (b"{", b"["):
                self._document = None
                return
        document += chunk

    def _keep_tail(self, chunk: bytes) -> None:
        keep = self._tail_keep
        if not keep:
            return
        if len(chunk) >= keep:
            self._tail = bytearray(chunk[len(chunk) - keep :])
            return
        self._tail += chunk
        # Trim only when the ring holds twice what it must: amortised O(1) per byte.
        if len(self._tail) >= 2 * keep:
            del self._tail[: len(self._tail) - keep]

    def close(self) -> tuple[bool, Cap | None]:
        """End of stream: whether it is cut, and by which cap (``None`` if not cut)."""
        self._closed = True
        if self.limit is None:
            return False, None
        if self._whole is not None:
            size = len(decode(bytes(self._whole)).encode("utf-8"))
            over_threshold = self.threshold is not None and size > self.threshold
            over_ceiling = self.ceiling is not None and size > self.ceiling
        else:
            # Over the smaller limit, so over one of the two: if not the threshold,
            # then the ceiling.
            over_threshold = self.threshold is not None and self._over_threshold()
            over_ceiling = not over_threshold
        if over_threshold:
            return True, "size_threshold"
        if over_ceiling:
            return True, "batch_ceiling"
        return False, None

    def _over_threshold(self) -> bool:
        # Called once the stream is over the smaller limit.
        assert self.threshold is not None
        if self.total > self.threshold:
            return True
        if not self._counting:
            # The threshold is the smaller limit, and the stream is over it.
            return True
        tail = self._decoder.decode(b"", final=True)
        return self._decoded + len(tail.encode("utf-8")) > self.threshold

    def result(self, cap: Cap, reference: str | None = None) -> tuple[CapResult, Cap]:
        """The cut for a closed stream that :meth:`close` said is cut by ``cap``.

        A threshold cut that still exceeds the ceiling is cut again from the
        original to the ceiling, as the finalizer does.
        """
        if cap == "size_threshold":
            assert self.threshold is not None
            result = self._cut(self.threshold, reference)
            if self.ceiling is None or result.kept_bytes <= self.ceiling:
                return result, cap
        assert self.ceiling is not None
        return self._cut(self.ceiling, reference), "batch_ceiling"

    def _cut(self, limit: int, reference: str | None) -> CapResult:
        if self._document is not None:
            result = cut_json(decode(bytes(self._document)), limit, format=self._format,
                              strategy=self._strategy, head_ratio=self._head_ratio,
                              marker=self._marker, reference=reference,
                              original_bytes=self.total)
            if result is not None:
                return result
        plan = self._plan(limit, reference is not None)
        head = bytes(self._head[: plan.head + 1])
        tail = bytes(self._tail[max(0, len(self._tail) - plan.tail) :]) if plan.tail else b""
        return assemble(plan, head, tail, original_bytes=self.total, limit=limit,
                        reference=reference, snap_lines=self._snap)


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
        self._tool = tool
        self.not_kept: str | None = None

    @property
    def passthrough(self) -> bool:
        """No limit applies: the caller writes chunks out as they come (nothing is held)."""
        return self.cutter.unlimited

    def write(self, chunk: bytes) -> None:
        """Take the next bytes of the stream (kept by reference: a buffer is copied)."""
        if not isinstance(chunk, bytes):
            chunk = bytes(chunk)  # the spill may still hold it after this returns
        cutter = self.cutter
        if self._writer is not None:
            self._spill(chunk)
        elif (
            self._open_writer is not None
            and cutter.limit is not None
            and cutter.total <= cutter.limit < cutter.total + len(chunk)
        ):
            # This chunk makes it sure to be cut: start the artifact with what came before.
            self._start(cutter.held)
            self._spill(chunk)
        cutter.feed(chunk)

    def close(self) -> StreamOutcome:
        """End of stream: commit the artifact if the stream was cut, and cut it."""
        cutter = self.cutter
        held = cutter.held
        cut, cap = cutter.close()
        if not cut or cap is None:
            if self._writer is not None:  # pragma: no cover - a cut stream always has a cap
                self._writer.abort()
            return StreamOutcome(held, None, None, cutter.total)
        if self._writer is None and self._open_writer is not None:
            # Short enough to be held, but cut all the same (invalid bytes grew in decoding).
            self._start(held)
        kept = self._writer is not None
        reference = self._commit()
        result, capped_by = cutter.result(cap, reference)
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
            self._writer = opener()
        except Exception as error:  # any store failure: deliver bounded, say why
            self._failed(error)
            return
        self._spill(prefix)

    def _spill(self, chunk: bytes) -> None:
        if self._writer is None or not chunk:
            return
        try:
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
