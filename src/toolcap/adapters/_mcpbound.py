"""The work of bounding MCP content blocks, shared by every kind of MCP result.

:mod:`toolcap.adapters.mcp` says the rules; this module carries them out on a
list of content blocks (a tool result's ``content``, a prompt's messages' blocks,
a resource's ``contents``), recording what it stored and which caps cut.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .._finalize import FinalizedResponse, Policy, ToolResponse
from .._notice import Cap
from .._wire import Source, blocks_fit, fit_wire, held_source
from ..core._json import block_shares, json_size
from ..core._marker import SHORT_MARKER, Rendered
from ..core._media import Media, media_of
from ..core._refs import format_ref
from ..core._sizes import human_size
from ..core._utf8 import sanitize, utf8_size
from ._common import keep_media

__all__ = ["REMOVED", "Bounder", "Slot", "block_slots", "overhead", "result_limit"]

T = TypeVar("T")


def result_limit(policy: Policy, tool: str | None, wire_budget: int | None) -> int | None:
    """The most bytes a result of ``tool`` holds once bounded (``None``: unbounded):
    the least of its ``size_threshold``, the batch ceiling and ``wire_budget``."""
    threshold = policy.for_tool(tool).size_threshold if tool is not None else None
    limits = [policy.config.batch_ceiling, wire_budget, threshold]
    return min((limit for limit in limits if limit is not None), default=None)


class Slot:
    """One text field of the result that takes part in the shared budget."""

    def __init__(
        self, text: str, overhead: int, blocks: list[Any], index: int, inner: str | None = None
    ) -> None:
        self.text = text
        self.overhead = overhead  # JSON bytes of the enclosing object apart from the text string
        self._blocks = blocks
        self._index = index
        self._inner = inner

    def put(self, text: str) -> None:
        self.text = text
        block = self._blocks[self._index]
        if self._inner is None:
            self._blocks[self._index] = {**block, "text": text}
        else:
            self._blocks[self._index] = {**block, self._inner: {**block[self._inner], "text": text}}

    def remove(self) -> None:
        self._blocks[self._index] = REMOVED


REMOVED: Any = object()


class Bounder:
    """The work on one result; every step records what it stored."""

    def __init__(
        self,
        policy: Policy,
        tool: str,
        call_id: str | None,
        media_threshold: int | None,
        wire_budget: int | None,
    ) -> None:
        self.policy = policy
        self.tool = tool
        self.call_id = call_id
        self.media_threshold = media_threshold
        self.wire_budget = wire_budget
        self.artifacts: list[str] = []
        self.changed = False
        #: The caps that cut, in the order they did (the last one set the size sent).
        self.caps: list[str] = []
        #: The reference of the original, when another toolcap already cut this result
        #: and its references can be read through this one (a proxy in front of a proxy).
        self.upstream_ref: str | None = None
        #: Long strings of this result measured so far (``json_size``'s table): a text
        #: that is also in structuredContent is measured once for the cut and the record.
        self.measured: dict[int, tuple[str, int]] = {}
        #: Room kept beside the text for the notes this result will carry (a stored
        #: medium's, structuredContent's): UTF-8 bytes with the line break before
        #: each, and JSON bytes of their blocks with the comma before each.
        self.reserved = 0
        self.reserved_wire = 0
        #: The notes that replaced media, not yet given room (``_mcpfold.Noted``): the
        #: list holding each, its index, the JSON bytes around it.
        self.noted: list[tuple[list[Any], int, int]] = []

    def reserve(self, note: str, block_bytes: int) -> None:
        """Keep room for ``note``, a text the result carries beside its text blocks in a
        block of ``block_bytes`` JSON bytes, so that the text is cut to leave it room."""
        self.reserved += len(note.encode("utf-8", "surrogatepass")) + 1
        self.reserved_wire += block_bytes + 1

    def text_limit(self) -> int | None:
        """The UTF-8 bytes the seam's caps hold this result's text to, before notes."""
        return result_limit(self.policy, self.tool, None)

    def cap_of(self, bound: int) -> Cap:
        """The name of the limit that ``bound`` is."""
        if bound == self.policy.for_tool(self.tool).size_threshold:
            return "size_threshold"
        return "wire_budget" if bound == self.wire_budget else "batch_ceiling"

    def text_policy(self) -> Policy:
        """The policy the text is cut by: the tool's, its limit lowered by the room
        the notes take (never below the short marker, which says the text was cut)."""
        limit = self.text_limit()
        if not self.reserved or limit is None:
            return self.policy
        return self.policy.narrowed(self.tool, max(len(SHORT_MARKER), limit - self.reserved),
                                    cap=self.cap_of(limit))

    def fits_whole(self, slots: list[Slot]) -> bool:
        """Whether the text of ``slots`` fits whole beside the notes kept room for so
        far (a dry measure: nothing is cut, stored or printed)."""
        room = self.text_limit()
        if room is not None:
            room -= self.reserved
            joined = len(slots) - 1  # line breaks between the texts, as the seam counts
            if sum(len(slot.text) for slot in slots) + joined > room:  # bytes >= code points
                return False
            if sum(utf8_size(slot.text) for slot in slots) + joined > room:
                return False
        wire = self.text_wire
        if wire is None or not slots:
            return True
        planned = block_shares([slot.text for slot in slots], wire,
                               overheads=[slot.overhead for slot in slots])
        return planned is not None and planned[0] == planned[1]

    @property
    def text_wire(self) -> int | None:
        """The wire budget of the text blocks: the room the notes' blocks take aside."""
        if self.wire_budget is None:
            return None
        return max(len(SHORT_MARKER) + 2, self.wire_budget - self.reserved_wire)

    def cut_by(self, cap: str) -> None:
        self.changed = True
        if cap not in self.caps:
            self.caps.append(cap)

    # -- media ---------------------------------------------------------------

    def replace_media(self, media: Media | None) -> str | None:
        """Store a medium over the media threshold whole; the text that stands in its place."""
        limit = self.media_threshold
        if media is None or limit is None or media.size <= limit:
            return None
        self.cut_by("media_threshold")
        text, reference = keep_media(self.policy, self.tool, media, limit, io=True)
        self.record(reference)
        return sanitize(text)  # it names a URI as received: never a lone surrogate sent

    def record(self, reference: str | None) -> None:
        if reference and reference not in self.artifacts:
            self.artifacts.append(reference)

    @property
    def spill_on(self) -> bool:
        return self.policy.for_tool(self.tool).spill

    # -- text ----------------------------------------------------------------

    def share(self, slots: list[Slot], is_error: bool) -> None:
        """Bound the text slots together, store what is cut once, then the wire step."""
        if not slots:
            return
        policy, wire = self.text_policy(), self.text_wire
        overheads = [slot.overhead for slot in slots]
        cut, join = self.plan(slots, overheads, is_error, policy)
        if join:  # one block holds them all; see plan()
            joined = "\n".join(slot.text for slot in slots)
            for slot in slots[1:]:
                slot.remove()
            slots, overheads = slots[:1], overheads[:1]
            slots[0].put(joined)
            self.changed = True
        originals = [slot.text for slot in slots]
        whole = "\n".join(originals)
        inner = self.inner_marker(originals)
        if inner is not None:  # a second cut names the original, not the first cut
            decided: tuple[str, ...] | None = (self.upstream_ref or "",)
        else:
            decided = self.keep_whole(whole) if cut and len(slots) > 1 else None
        response = ToolResponse(self.tool, originals, self.call_id, is_error, decided)
        final = policy.finalize([response])[0]
        texts = list(final.parts or originals)
        if final.capped_by is not None:
            self.cut_by(final.capped_by)
            for reference in final.artifacts or ():
                self.record(reference)
        if final.merged is not None:  # a collapse made several blocks one
            for slot, text in zip(slots, final.aligned(), strict=True):
                if text is None:
                    slot.remove()
            slots, overheads = _kept(final, slots), _kept(final, overheads)
        if wire is not None:
            known = final.artifacts or ()
            if inner is not None:  # the wire cut names the original too
                known = decided or ()
            fit = fit_wire(policy, self.tool, texts, wire,
                           whole=None if inner is not None else whole,
                           known=known, overheads=overheads,
                           original_bytes=final.original_bytes, call_id=self.call_id,
                           sources=self.sources(final, originals, policy))
            if fit.changed:
                self.cut_by("wire_budget")
                self.record(fit.reference)
            texts = fit.texts
        if inner is not None and texts[0] is not originals[0]:
            texts[0] = self.restated(texts[0], final.original_bytes, inner, overheads[0])
        for slot, text in zip(slots, texts, strict=True):
            if text is not slot.text:
                slot.put(text)

    def inner_marker(self, originals: list[str]) -> Rendered | None:
        """The marker of the toolcap that cut this one text before, naming the original."""
        if self.upstream_ref is None or len(originals) != 1:
            return None
        marker = self.policy.for_tool(self.tool).marker
        return next((seen for seen in marker.find(originals[0])
                     if seen.reference == self.upstream_ref and seen.original), None)

    def restated(self, text: str, received: int, inner: Rendered, around: int) -> str:
        """``text`` whose marker states the original's size (as the first cut's marker
        says it) instead of the size received, if that keeps it within every limit."""
        assert inner.original is not None
        marker = self.policy.for_tool(self.tool).marker
        ours = [seen for seen in marker.find(text)
                if seen.reference == inner.reference and seen.original == human_size(received)]
        if len(ours) != 1:
            return text
        new = text[: ours[0].start] + marker.restate(ours[0], inner.original) + text[ours[0].end :]
        # The cut kept room for the widest marker, so the restated one fits; checked still.
        text_limit = self.text_limit()  # on UTF-8 bytes
        if text_limit is not None and len(new.encode("utf-8")) + self.reserved > text_limit:
            return text
        wire = self.text_wire
        if wire is not None and json_size(new) + around > wire:
            return text
        return new

    def plan(self, slots: list[Slot], overheads: list[int], is_error: bool,
             policy: Policy | None = None) -> tuple[bool, bool]:
        """Whether a cap will cut these blocks, and whether they must be joined into one.

        They are joined when the wire cannot hold them even empty (thousands of
        blocks), or when its shares would be too small for a marker naming the
        artifact: then the model would get neither the text nor where it is. A
        dry run (no I/O) tells, with a stand-in reference of the real length.
        ``policy``: the one the text is cut by (default: :meth:`text_policy`).
        """
        if len(slots) <= 1:
            return False, False
        wire = self.text_wire
        if wire is not None and not blocks_fit(overheads, wire):
            return True, True
        policy = policy or self.text_policy()
        originals = [slot.text for slot in slots]
        probe = policy.guard([ToolResponse(self.tool, originals, is_error=is_error)])[0]
        if wire is None:
            return probe.capped_by is not None, False
        fit = fit_wire(policy, self.tool, list(probe.parts or originals), wire,
                       whole=None, known=[_STAND_IN], overheads=_kept(probe, overheads),
                       io=False, sources=self.sources(probe, originals, policy))
        if fit.changed and not any(_STAND_IN in text for text in fit.texts):
            return True, True
        return probe.capped_by is not None or fit.changed, False

    def sources(self, final: FinalizedResponse, originals: list[str],
                policy: Policy) -> list[Source]:
        """Per delivered part, its original, for a wire cut made from it (a part a
        collapse made of several stands for them joined)."""
        if final.merged is not None:
            start, end = final.merged
            originals = [*originals[:start], "\n".join(originals[start:end]), *originals[end:]]
        tool_policy = policy.for_tool(self.tool)
        return [held_source(tool_policy, original) for original in originals]

    def keep_whole(self, whole: str) -> tuple[str, ...] | None:
        """Store the whole response once, before a cut, so that every marker names it.

        A single part is left to the seam, which stores exactly that part when
        it cuts it. ``None`` when nothing was stored: the seam then tries itself.
        """
        if not self.spill_on:
            return None
        reference = self.policy.spill(sanitize(whole).encode("utf-8"), tool=self.tool)
        self.record(reference)
        return None if reference is None else (reference,)


#: A reference of the real length for dry runs (no artifact has this name).
_STAND_IN = format_ref("0" * 64)


def _kept(final: FinalizedResponse, items: list[T]) -> list[T]:
    """The items of the parts a collapse did not merge away (all when none was)."""
    if final.merged is None:
        return items
    return [item for item, text in zip(items, final.aligned(), strict=True) if text is not None]


def overhead(obj: dict[str, Any], key: str) -> int:
    """JSON bytes of ``obj`` apart from the string under ``key``."""
    return json_size({**obj, key: ""}) - 2




def block_slots(work: Bounder, blocks: list[Any], envelopes: list[int] | None = None) -> list[Slot]:
    """The text slots of content ``blocks`` (changed in place as they are bounded);
    media over the threshold are replaced by their note here (in ``work.noted``, to
    be given room: :func:`toolcap.adapters._mcpfold.keep_all_notes`).

    ``envelopes[i]``: JSON bytes around block ``i`` that are not the block's own
    (a prompt message's ``role``), counted against the wire budget with it.
    """
    slots: list[Slot] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        around = envelopes[index] if envelopes is not None else 0
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            slots.append(Slot(block["text"], overhead(block, "text") + around, blocks, index))
        elif kind in ("image", "audio", "resource"):
            note = work.replace_media(media_of(block))
            if note is not None:
                blocks[index] = {"type": "text", "text": note}
                work.noted.append((blocks, index, around))
            elif kind == "resource" and isinstance(block["resource"].get("text"), str):
                # An embedded text under the media threshold is text like any other.
                resource = block["resource"]
                size = json_size({**block, "resource": {**resource, "text": ""}}) - 2 + around
                slots.append(Slot(resource["text"], size, blocks, index, "resource"))
    return slots
