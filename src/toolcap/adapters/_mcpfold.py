"""Media notes too many for the limit: those past the ones that fit become one note.

Each medium over ``media_threshold`` is stored and replaced by a note of about 110
bytes, and the notes count against the result's limit with its text
(:meth:`toolcap.adapters._mcpbound.Bounder.reserve`). A dozen images under a 1 KB
limit give more notes than the limit holds (with room for the text's short
marker): then the notes that fit in half the limit (the other half is the
text's) are kept, in order, and the rest are stored as one
text (their notes, one a line, each naming its medium's artifact) and replaced by
one note naming it, where the first of them stood. The blocks of the others are
dropped (a prompt's message of such a block with it).
"""

from __future__ import annotations

from typing import Any

from ..core._json import json_size
from ..core._marker import SHORT_MARKER
from ..core._refs import MAX_REFERENCE_LENGTH
from ..core._sizes import human_size
from ..core._utf8 import utf8_size
from ._mcpbound import REMOVED, Bounder

__all__ = ["Noted", "keep_all_notes", "keep_notes"]

#: A note standing for a medium: the list holding its block, the block's index, and
#: the JSON bytes around the block that are not its own (a prompt message's role).
Noted = tuple[list[Any], int, int]


def keep_all_notes(work: Bounder, has_text: bool) -> None:
    """:func:`keep_notes` of the notes ``work`` replaced media by so far."""
    keep_notes(work, work.noted, has_text)
    work.noted = []


def keep_notes(work: Bounder, noted: list[Noted], has_text: bool) -> None:
    """Keep room beside the text for the notes ``noted`` (in order), folding those
    past the ones that fit into one note (see the module doc)."""
    if not noted:
        return
    sizes = [(utf8_size(c[i]["text"]) + 1, json_size(c[i]) + around + 1) for c, i, around in noted]
    text_limit, wire = work.text_limit(), work.wire_budget
    # The least the text takes beside them: the short marker, in a block of its own.
    floor = len(SHORT_MARKER) + 1 if has_text else 0
    wire_floor = floor + 2 + 32 if has_text else 0
    if _within(sum(u for u, _ in sizes) + floor, sum(w for _, w in sizes) + wire_floor,
               text_limit, wire):
        for (container, index, _), (_, block) in zip(noted, sizes, strict=True):
            work.reserve(container[index]["text"], block - 1)
        return
    # Folding, the notes take half the limit at most: the other half is the text's.
    if has_text:
        text_limit = None if text_limit is None else text_limit // 2
        wire = None if wire is None else wire // 2
    widest = _fold_note(work, len(noted), "f" * MAX_REFERENCE_LENGTH)
    # The fold note takes the place of the first folded block, keeping that block's
    # other fields (a resource's uri) and what is around it: which block that is
    # depends on how many are kept, so the widest of them is counted.
    fold_block = max(json_size({**container[index], "text": widest}) + around
                     for container, index, around in noted)
    used = (utf8_size(widest) + 1, fold_block + 1)
    kept = 0
    while kept < len(noted) and _within(used[0] + sizes[kept][0], used[1] + sizes[kept][1],
                                        text_limit, wire):
        used = (used[0] + sizes[kept][0], used[1] + sizes[kept][1])
        kept += 1
    for container, index, around in noted[:kept]:
        work.reserve(container[index]["text"], json_size(container[index]) + around)
    folded = noted[kept:]
    if not folded:  # all fit in half (a limit too small for the text's floor): no fold
        return
    listing = "\n".join(container[index]["text"] for container, index, _ in folded)
    reference = work.policy.spill(listing.encode("utf-8"), tool=work.tool) if (
        work.spill_on) else None
    work.record(reference)
    note = _fold_note(work, len(folded), reference)
    container, index, around = folded[0]
    container[index] = {**container[index], "text": note}
    work.reserve(note, json_size(container[index]) + around)
    for container, index, _ in folded[1:]:
        container[index] = REMOVED


def _within(utf8: int, wire_bytes: int, text_limit: int | None, wire: int | None) -> bool:
    return (text_limit is None or utf8 <= text_limit) and (wire is None or wire_bytes <= wire)


def _fold_note(work: Bounder, count: int, reference: str | None) -> str:
    threshold = work.media_threshold or 0
    where = f"; their notes: {reference}" if reference else ""
    return (f"[toolcap: {count} more media not sent: over the {human_size(threshold)} "
            f"media limit{where}]")

