"""Bound a stream of bytes of any length, holding only what the cut can need.

A cut is planned from the limit alone (:func:`toolcap.core._cut.plan_cut`), so a
stream needs to keep only the first ``plan.head + 1`` bytes, a ring of the last
``plan.tail`` bytes, and, while the stream is still short enough to be passed
through unchanged, the bytes seen so far (never more than the limit). What comes
out is exactly what :meth:`toolcap.Policy.finalize` gives for the same bytes as a
batch of one: the per-tool threshold first, then the batch ceiling, the marker
naming the artifact when the original was kept.

:class:`StreamCutter` does no I/O at all (a long stream's ``keep_lines`` are
looked for on a thread: :mod:`._scanthread`). :class:`~._capstream.CapStream`
adds the spill.
"""

from __future__ import annotations

import codecs

from .._notice import Cap
from ..core._cut import CapResult, CutPlan, Strategy, assemble, assemble_keeping, plan_cut
from ..core._jsoncut import cut_json
from ..core._jsondoc import MAX_STRUCTURAL_BYTES, Format
from ..core._jsonlines import PREFIX_BYTES, cut_json_lines
from ..core._keeplines import KeepLines
from ..core._keepstream import LineCollector
from ..core._marker import Marker
from ..core._sizes import Limit
from ..core._sniff import Sniffer
from ..core._utf8 import decode, utf8_size
from ._scanthread import CollectorThread

__all__ = ["StreamCutter"]


class StreamCutter:
    """Take a stream in chunks and cut it as ``Policy.finalize`` cuts the whole.

    Args:
        threshold: the tool's ``size_threshold`` (``None``: unlimited).
        ceiling: the batch ceiling (``None``: none), applied after the threshold.
        strategy, head_ratio, marker, snap_lines: as for :func:`toolcap.cap_text`.
        format: the tool's ``format``: unless ``"text"``, a stream that starts
            like a JSON object or array is held whole (up to
            ``MAX_STRUCTURAL_BYTES``, 64 MB) so that it can be cut by structure.
        name_binary: with no limit at all, still name a binary stream (the
            first :data:`SNIFF_BYTES` are held until they decide it; text then
            passes through). Under a limit binary is always named.
        keep_lines: the lines a cut keeps from its elided part (the tool's
            ``keep``); they are found as the stream passes, within a bound.

    Memory is bounded by the limits, whatever the length of the stream: the head
    and tail the widest possible plan needs, plus the stream itself only while it
    is no longer than the smaller limit, or while it may be a JSON document of
    at most 64 MB (larger documents are cut as text in every path), plus its
    first bytes that decide whether it is binary (:data:`SNIFF_BYTES`).
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
        name_binary: bool = False,
        keep_lines: KeepLines | None = None,
    ) -> None:
        self.threshold = threshold
        # Under a limit binary is always named; with none, only when asked to.
        self._sniffing = bool(threshold is not None or ceiling is not None or name_binary)
        self._format: Format = format
        self.ceiling = ceiling
        self._strategy: Strategy = strategy
        self._head_ratio = head_ratio
        self._marker = marker or Marker()
        self._snap = snap_lines
        limits = [limit for limit in (threshold, ceiling) if limit is not None]
        #: The stream is passed through unchanged only if it decodes to at most this.
        self.limit: Limit = min(limits) if limits else None
        # Keep what the widest plan can ask for: each limit that can cut, with or without
        # a reference. A ceiling no lower than the threshold never does: whatever is over
        # it is over the threshold too, and the threshold's cut fits under it.
        cutting = ([threshold] if threshold is not None and ceiling is not None
                   and threshold <= ceiling else limits)
        plans = [self._plan(limit, stored) for limit in cutting for stored in (False, True)]
        self._head_keep = max(plan.head for plan in plans) + 1 if plans else 0
        self._tail_keep = max((plan.tail for plan in plans), default=0)
        self._head = bytearray()
        self._tail = bytearray()
        self._prefix = bytearray()  # whether it is JSON Lines is told from its start
        # The matching lines, when a cut may keep some (bounded: see LineCollector).
        self._keep = keep_lines if keep_lines and keep_lines.matchers and (
            strategy != "head") else None
        self._lines = CollectorThread(LineCollector(
            self._keep, head_keep=self._head_keep, tail_keep=self._tail_keep,
            budget=max(self._keep.budget(plan.head + plan.tail) for plan in plans),
        )) if self._keep is not None and plans else None
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
        self._sniff = Sniffer()

    def _plan(self, limit: int, stored: bool) -> CutPlan:
        return plan_cut(limit, strategy=self._strategy, head_ratio=self._head_ratio,
                        marker=self._marker, stored=stored)

    @property
    def unlimited(self) -> bool:
        """No limit at all: the stream passes through and nothing needs to be held."""
        return self.limit is None

    @property
    def binary(self) -> bool | None:
        """Whether the stream is binary: ``None`` until its first bytes decide it."""
        return self._sniff.binary

    @property
    def sniffed(self) -> bytes:
        """The stream's first bytes (all of it while :attr:`binary` is undecided)."""
        return bytes(self._sniff.sample)

    @property
    def deciding(self) -> bool:
        """No limit, and the first bytes are held until they decide whether it is binary."""
        return self.limit is None and self._sniffing and self.binary is None

    @property
    def held(self) -> bytes:
        """The stream so far, while it is held whole (empty once it is over the limit)."""
        return bytes(self._whole) if self._whole is not None else b""

    def feed(self, chunk: bytes, newlines: int | None = None) -> None:
        """Take the next bytes of the stream (``newlines``: its line breaks, if counted)."""
        if self._closed:
            raise ValueError("the stream is already closed")
        size = len(chunk)
        if self._sniffing:
            self._sniff.take(chunk)
            if self.binary:  # binary is never a JSON document: hold none of it
                self._document = None
        if not size or self.limit is None:
            self.total += size
            return
        if len(self._head) < self._head_keep:
            self._head += chunk[: self._head_keep - len(self._head)]
        self._keep_tail(chunk)
        if self._lines is not None:
            self._lines.feed(chunk, newlines)
        if self._counting and self.total <= self.threshold:  # type: ignore[operator]
            piece = self._decoder.decode(chunk)
            self._decoded += len(piece) if piece.isascii() else len(piece.encode("utf-8"))
        self.total += size
        if self._document is not None:
            self._hold_document(chunk)
        if len(self._prefix) < PREFIX_BYTES and self._format != "text":
            self._prefix += chunk[: PREFIX_BYTES - len(self._prefix)]
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
        if self._lines is not None:
            self._lines.wait()  # the scan of the last chunks, if it runs on a thread
        if self._sniffing and self._sniff.decide():
            return True, "binary"
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

    def result(
        self, cap: Cap, reference: str | None = None, *, tried: bool = False
    ) -> tuple[CapResult, Cap]:
        """The cut for a closed stream that :meth:`close` said is cut by ``cap``.

        A threshold cut that still exceeds the ceiling is cut again from the
        original to the ceiling, as the finalizer does. A binary stream becomes
        the line naming it (``tried``: keeping it was attempted).
        """
        if cap == "binary":
            note = self._sniff.note(self.total, reference=reference, tried=tried)
            return CapResult(note, True, self.total, utf8_size(note), reference), cap
        if cap == "size_threshold":
            assert self.threshold is not None
            result = self._cut(self.threshold, reference)
            if self.ceiling is None or result.kept_bytes <= self.ceiling:
                return result, cap
        assert self.ceiling is not None
        return self._cut(self.ceiling, reference), "batch_ceiling"

    def recut(self, limit: int, reference: str | None) -> CapResult:
        """The closed stream cut again, to ``limit`` no more than the limit it was
        cut to (what it holds suffices): the wire step's cut from the original."""
        return self._cut(limit, reference)

    def _cut(self, limit: int, reference: str | None) -> CapResult:
        # Replaced invalid bytes grow; a cut never delivers more than it received.
        limit = min(limit, self.total)
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
        if self._format != "text" and self.total > limit:
            lines = cut_json_lines(plan, head, tail, original_bytes=self.total,
                                   prefix=bytes(self._prefix), reference=reference)
            if lines is not None:
                return lines
        if self._lines is not None and self._keep is not None:
            return assemble_keeping(plan, head, tail, original_bytes=self.total, limit=limit,
                                    keep=self._keep, middle=self._lines.middle,
                                    reference=reference, snap_lines=self._snap)
        return assemble(plan, head, tail, original_bytes=self.total, limit=limit,
                        reference=reference, snap_lines=self._snap)
