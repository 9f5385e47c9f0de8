"""The one seam every tool response passes before it is recorded and sent.

``Policy.finalize`` takes one batch (all tool responses of one model turn) and returns
what must be both recorded and sent: per-tool thresholds first, then the batch ceiling,
spilling each cut original to the artifact store at most once."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TextIO

from ._config import Config, ToolPolicy, load_config
from ._diagnostics import observe
from ._notice import Cap, emit_notice, failure_reason, logger, notice_line
from ._tokenizer import turn_ceiling
from ._work import Content, Part, ToolResponse, Work
from .core._allocate import water_fill
from .core._cut import cut
from .core._default import DEFAULT, Default
from .core._jsoncut import cut_by_format
from .core._refs import REFERENCE_LENGTH, fits_marker
from .core._sizes import Limit
from .core._sniff import binary_kind, binary_note, is_binary
from .core._strategy import plan_parts
from .core._utf8 import decode, sanitize, utf8_size

if TYPE_CHECKING:
    from .protocols import ArtifactSink

__all__ = ["FinalizedResponse", "Policy", "ToolResponse"]

# A cut that keeps less than this beside its marker says nothing useful: below it,
# the parts of a response are collapsed under one marker instead.
_MIN_CONTENT = 64



@dataclass(frozen=True)
class FinalizedResponse:
    """What a response became: the same value is recorded and sent.

    Attributes:
        parts: the delivered text parts, in order: one per input part (one for
            ``str`` or ``bytes`` content), except when a cut collapsed several
            parts into one that holds the marker (too many parts for a marker in
            each); ``None`` when the content was ``None``.
        original_bytes: UTF-8 size of the content as received.
        delivered_bytes: UTF-8 size of the delivered parts together.
        capped_by: ``"size_threshold"``, ``"batch_ceiling"``, ``"binary"`` (a part
            that is not text was replaced by a line naming it) or ``None``.
        artifacts: the tri-state record: ``None`` not decided, ``()`` nothing
            stored, else the references of the stored originals.
        not_kept: why the full original could not be stored, when it could not.
        merged: when several parts were collapsed into one, the span ``(start,
            end)`` of input parts that ``parts[start]`` stands for; else ``None``.
    """

    tool: str
    call_id: str | None
    is_error: bool
    parts: tuple[str, ...] | None
    original_bytes: int
    delivered_bytes: int
    capped_by: Cap | None
    artifacts: tuple[str, ...] | None
    not_kept: str | None = None
    merged: tuple[int, int] | None = None

    def aligned(self) -> list[str | None]:
        """The delivered parts, one per input part: ``None`` for a part merged away.

        For callers that map parts back to blocks: the block of a ``None`` entry
        is dropped (its text is in the merged part, and in the artifact).
        """
        parts: list[str | None] = list(self.parts or ())
        if self.merged is not None:
            start, end = self.merged
            parts[start + 1 : start + 1] = [None] * (end - start - 1)
        return parts

    @property
    def text(self) -> str | None:
        """The delivered text (parts joined with newlines when there are several)."""
        if self.parts is None:
            return None
        return self.parts[0] if len(self.parts) == 1 else "\n".join(self.parts)

    @property
    def truncated(self) -> bool:
        """Whether a cap changed this response."""
        return self.capped_by is not None

    def as_response(self) -> ToolResponse:
        """This result as a response again (finalizing it once more changes nothing)."""
        content: Content = None if self.parts is None else list(self.parts)
        if self.parts is not None and len(self.parts) == 1:
            content = self.parts[0]
        return ToolResponse(self.tool, content, self.call_id, self.is_error, self.artifacts)


class Policy:
    """Configuration plus an artifact store: the finalizer of tool responses.

    Args:
        config: the configuration; by default, :func:`load_config` is not called
            and the built-in defaults apply (use :meth:`load` to read files).
        sink: where cut originals are kept. ``"default"`` opens the store named by
            ``config.artifacts`` on first use; ``None`` keeps nothing.
        notices: print the notice line on stderr; ``"default"``: ``config.notices``.
        known_tools: tool names the caller has; configured tools not among them
            are reported with a WARNING, never an error.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        sink: ArtifactSink | Default | None = DEFAULT,
        notices: bool | Default = DEFAULT,
        stderr: TextIO | None = None,
        known_tools: Iterable[str] | None = None,
    ) -> None:
        self.config = config or Config()
        self._sink: ArtifactSink | Default | None = sink
        self.notices = self.config.notices if notices == DEFAULT else bool(notices)
        self._stderr = stderr
        self._narrowed: tuple[str, ToolPolicy, Cap] | None = None
        if known_tools is not None:
            for name in self.config.unknown_tools(known_tools):
                logger.warning("configuration names tool %r, which is not in use", name)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, **options: object) -> Policy:
        """A policy from configuration files and environment (see :func:`load_config`)."""
        return cls(load_config(path), **options)  # type: ignore[arg-type]

    def for_tool(self, name: str) -> ToolPolicy:
        """The resolved policy for tool ``name``."""
        narrowed = self._narrowed
        if narrowed is not None and narrowed[0] == name:
            return narrowed[1]
        return self.config.for_tool(name)

    def narrowed(self, tool: str, size_threshold: int, *,
                 cap: Cap = "size_threshold") -> Policy:
        """This policy (the same store, notices and settings) with ``tool``'s
        ``size_threshold`` at ``size_threshold`` bytes, however small; a cut to it is
        named ``cap`` (the limit it stands for) in the notice and the record.

        For a caller that keeps room beside a response's text for lines of its own
        (the notes of an MCP result), so that the text and those lines together stay
        within the tool's limit. Nothing else changes: not the configuration, which
        holds every limit to the 1 KB minimum.
        """
        twin = copy.copy(self)
        twin._sink = self.sink  # opened once, shared: the twin stores where this one does
        twin._narrowed = (tool, replace(self.for_tool(tool), size_threshold=size_threshold), cap)
        return twin

    @property
    def sink(self) -> ArtifactSink | None:
        """The artifact store, opened on first use; ``None`` if there is none."""
        sink = self._sink
        if isinstance(sink, str):
            from .store import UnavailableStore, open_store

            try:
                sink = open_store(self.config.artifacts, limits=self.config.store)
            except Exception as error:  # any failure to open means: keep nothing, say why
                sink = UnavailableStore(failure_reason(error))
                logger.warning("artifact store unavailable: %s", sink.reason)
            self._sink = sink
        return sink

    def spill(self, data: bytes, *, tool: str | None = None) -> str | None:
        """Store ``data`` and return its reference, or ``None`` (with a WARNING) on failure."""
        reference, _ = self._put(data, tool)
        return reference

    def keep(self, data: bytes, *, tool: str | None = None) -> tuple[str | None, str | None]:
        """Store ``data``: ``(reference, None)``, or ``(None, reason)`` (with a WARNING)."""
        return self._put(data, tool)

    def finalize(self, responses: Sequence[ToolResponse], *,
                 context_used: int | None = None) -> list[FinalizedResponse]:
        """Bound one batch: per-tool thresholds, then the batch ceiling (lowered by
        ``context_window``'s pressure, ``context_used`` taken, in ``measure``'s unit)."""
        return self._finalize(responses, io=True, used=context_used)

    def guard(self, responses: Sequence[ToolResponse]) -> list[FinalizedResponse]:
        """:meth:`finalize` with no I/O at all: no store, no notice, no log record.

        For the send boundary: a request about to go out is bounded even where an
        earlier step was skipped. Already bounded responses come back unchanged.
        """
        return self._finalize(responses, io=False)

    # -- the steps -----------------------------------------------------------------

    def _finalize(self, responses: Sequence[ToolResponse], *, io: bool,
                  used: int | None = None) -> list[FinalizedResponse]:
        works = [self._receive(response) for response in responses]
        for work in works:
            if work is not None:
                self._name_binary(work, io)
                if io:
                    self._observe("received", work, changed=False)
                self._apply_threshold(work, io)
        present = [work for work in works if work is not None]
        ceiling = turn_ceiling(self.config, [p for w in present for p in w.parts], used)
        self._apply_ceiling(present, io, ceiling)
        results = []
        for response, work in zip(responses, works, strict=True):
            result = self._deliver(response, work, io)
            if io and result.capped_by is not None:
                assert work is not None
                line = notice_line(result.tool, work.sent_size(result.original_bytes),
                                   result.original_bytes, result.capped_by,
                                   not_kept=result.not_kept)
                emit_notice(line, stderr=self._stderr, to_stderr=self.notices)
            results.append(result)
        return results

    def _receive(self, response: ToolResponse) -> Work | None:
        content = response.content
        if content is None:
            return None
        originals: list[Part] = [content] if isinstance(content, (str, bytes)) else list(content)
        whole = [sanitize(p) if isinstance(p, str) else decode(p) for p in originals]
        sizes = [utf8_size(p) for p in whole]
        received = [len(p) if isinstance(p, bytes) else n
                    for p, n in zip(originals, sizes, strict=True)]
        return Work(response, self.for_tool(response.tool), originals, whole, sizes, received)

    def _name_binary(self, work: Work, io: bool) -> None:
        """Replace each ``bytes`` part that is not text by one line naming it, stored first."""
        for index, original in enumerate(work.originals):
            if isinstance(original, bytes) and is_binary(original):
                span = (index, index + 1)
                reference = self._spill_once(work, span, io)
                note = binary_note(len(original), binary_kind(original), reference=reference,
                                   tried=span in work.attempted)
                work.originals[index] = work.whole[index] = work.parts[index] = note
                work.whole_sizes[index] = work.sizes[index] = utf8_size(note)
                work.binary.add(index)
                work.cut_any, work.capped_by = True, "binary"

    def _apply_threshold(self, work: Work, io: bool) -> None:
        threshold = work.policy.size_threshold
        if threshold is not None and work.whole_size > threshold:
            self._cut_to(work, threshold, io)
            narrowed = self._narrowed
            cap: Cap = "size_threshold"
            if narrowed is not None and narrowed[0] == work.response.tool:
                cap = narrowed[2]
            work.capped_by = cap
            if io:
                self._observe(cap, work, changed=True)

    def _apply_ceiling(self, works: list[Work], io: bool, ceiling: Limit) -> None:
        sizes = [work.delivered_size for work in works]
        if ceiling is None or sum(sizes) <= ceiling:
            return
        for work, budget, size in zip(works, water_fill(sizes, ceiling), sizes, strict=True):
            if budget < size:
                self._cut_to(work, budget, io)
                work.capped_by = "batch_ceiling"
                if io:
                    self._observe("batch_ceiling", work, changed=True)

    def _cut_to(self, work: Work, budget: int, io: bool) -> None:
        # Always cut from the original, so a second cut never nests a marker.
        work.parts, work.sizes = list(work.whole), list(work.whole_sizes)
        work.merged = None
        policy = work.policy
        content = budget - work.separators
        shares = water_fill(work.whole_sizes, max(0, content))
        smallest_cut = policy.marker.reserve(REFERENCE_LENGTH) + _MIN_CONTENT
        if len(shares) > 1 and (content < smallest_cut or any(
            share < size and share < smallest_cut
            for share, size in zip(shares, work.whole_sizes, strict=True)
        )):
            self._collapse(work, budget, io)
            return
        for index, share in enumerate(shares):
            if share >= work.whole_sizes[index]:
                continue
            reference = self._spill_once(work, (index, index + 1), io)
            original = work.encoded.pop(index, None) or work.originals[index]
            result = cut_by_format(original, share, text=work.whole[index],
                                   reference=reference, **policy.cut_options)
            work.parts[index], work.sizes[index] = result.text, result.kept_bytes
            work.cut_any = True

    def _collapse(self, work: Work, budget: int, io: bool) -> None:
        """Too many parts for a marker in each: whole parts around one cut part.

        The parts between those kept whole (:func:`plan_parts`) are joined,
        stored once and cut into one part: fewer parts, so that their line
        breaks stay in the bound however many parts arrive.
        """
        policy = work.policy
        # The middle part keeps its marker, the line breaks around it and some
        # content: never only a marker, never the fallback's bare one.
        room = budget - policy.marker.reserve(REFERENCE_LENGTH) - 2 - _MIN_CONTENT
        first, last, whole_bytes = plan_parts(work.whole_sizes, room, policy.strategy,
                                              policy.head_ratio)
        reference = self._spill_once(work, (first, last), io)
        middle = work.originals[first] if last == first + 1 else "\n".join(work.whole[first:last])
        result = cut(middle, budget - whole_bytes, reference=reference,
                     **policy.text_cut_options)
        work.parts[first:last] = [result.text]
        work.sizes[first:last] = [result.kept_bytes]
        work.merged = (first, last)
        work.cut_any = True

    def _spill_once(self, work: Work, span: tuple[int, int], io: bool) -> str | None:
        """Store the parts ``span`` (start, end) once, joined by line breaks; the reference."""
        start, end = span
        decided = work.response.artifacts
        if decided is not None:
            chosen = decided[start] if len(decided) == len(work.originals) else (
                decided[0] if decided else None)
            return chosen if fits_marker(chosen) else None
        if span in work.attempted:
            return work.references.get(span)
        if not io or not work.policy.spill or self._sink is None:
            return None
        work.attempted.add(span)
        original = work.originals[start]
        if end > start + 1:
            data = "\n".join(work.whole[start:end]).encode("utf-8")
        elif isinstance(original, bytes):
            data = original
        else:
            data = work.encoded[start] = work.whole[start].encode("utf-8")
        reference, reason = self._put(data, work.response.tool)
        observe("spill", "artifact", data, tool=work.response.tool, call_id=work.response.call_id,
                artifacts=(reference,) if reference else (), changed=False)
        if reference is None:
            work.not_kept = reason
            return None
        work.references[span] = reference
        return reference

    def _observe(self, stage: str, work: Work, *, changed: bool) -> None:
        response = work.response
        for part in work.parts:
            observe(stage, "model_text", part, tool=response.tool, call_id=response.call_id,
                    artifacts=self._record(work), changed=changed,
                    wire_budget=self.config.wire_budget)

    @staticmethod
    def _record(work: Work) -> tuple[str, ...] | None:
        """The tri-state artifact record of a response so far."""
        if work.response.artifacts is not None or not work.cut_any:
            return work.response.artifacts
        return tuple(work.references[key] for key in sorted(work.references))

    def _put(self, data: bytes, tool: str | None) -> tuple[str | None, str | None]:
        sink = self.sink
        if sink is None:
            return None, "no artifact store"
        try:
            reference = sink.put(data, tool=tool)
            if not fits_marker(reference):
                raise ValueError(f"the store returned an unusable reference {reference!r:.80}")
            return reference, None
        except Exception as error:  # a store failure must never reach the agent loop
            reason = failure_reason(error)
            logger.warning("could not keep the full output of %s: %s", tool or "a tool", reason)
            return None, reason

    def _deliver(self, response: ToolResponse, work: Work | None, io: bool) -> FinalizedResponse:
        if work is None:
            return FinalizedResponse(response.tool, response.call_id, response.is_error, None,
                                     0, 0, None, response.artifacts)
        artifacts = self._record(work)
        original = work.separators + sum(work.original_sizes)
        return FinalizedResponse(
            response.tool, response.call_id, response.is_error, tuple(work.parts), original,
            work.delivered_size, work.capped_by, artifacts, work.not_kept, work.merged,
        )

