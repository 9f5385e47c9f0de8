"""Cutting a prompt by whole messages: what ``prompts/get`` does when its messages
are too many to share the budget one by one.

The cut shared by every result (:class:`toolcap.adapters._mcpbound.Bounder`)
joins many small blocks into one when each would get too small a share for a
marker (thousands of blocks). That is right for a tool's content blocks, which
say one thing together, and wrong for a prompt's messages: the roles and turns
of a conversation would become one user message. A prompt that would be joined
is cut here instead: a head and a tail of whole messages (shared as the
strategy shares a cut: :func:`toolcap.core._strategy.plan_parts`), and between
them one message, of the role of the first message it stands for, holding the
marker and naming the messages left out. Their text, with every other message's,
is stored once, joined by line breaks (as the shared cut stores it); a medium
left out is stored whole. The messages sent measure, as compact JSON, within the
result's limit: the marker message and any media notes included.
"""

from __future__ import annotations

from typing import Any

from .._finalize import ToolResponse
from ..core._json import json_size
from ..core._media import media_of
from ..core._strategy import plan_parts
from ._mcpbound import Bounder, Slot

__all__ = ["cut_messages", "merges_messages"]

_ROLES = ("user", "assistant")


def merges_messages(work: Bounder, slots: list[Slot], limit: int | None) -> bool:
    """Whether the shared cut would join some of these messages' blocks into one
    (a dry run: nothing is stored or printed)."""
    if limit is None or len(slots) <= 1:
        return False
    _, join = work.plan(slots, [slot.overhead for slot in slots], False)
    if join:
        return True
    probe = work.policy.guard([ToolResponse(work.tool, [slot.text for slot in slots])])[0]
    return probe.merged is not None


def cut_messages(
    work: Bounder, messages: list[Any], slots: list[Slot], limit: int
) -> list[Any] | None:
    """``messages`` (media over the threshold already replaced by their notes) cut
    to a head and a tail of whole messages around one marker message, their compact
    JSON within ``limit`` bytes; ``None`` when they cannot be measured (nested too
    deeply), for the shared cut to take them."""
    try:
        sizes = [json_size(message) for message in messages]
    except RecursionError:
        return None
    if 2 + sum(sizes) + len(sizes) - 1 <= limit:
        return list(messages)  # only media were replaced; the whole prompt fits
    whole = work.keep_whole("\n".join(slot.text for slot in slots)) if slots else None
    reference = whole[0] if whole else None
    tool_policy = work.policy.for_tool(work.tool)
    original = json_size(messages)
    room = limit - 2  # the list's brackets
    while True:
        # Each kept message also costs the comma after it, as plan_parts counts.
        first, last, kept = plan_parts(sizes, max(0, room), tool_policy.strategy,
                                       tool_policy.head_ratio)
        marker = _marker_message(work, messages, (first, last), original, kept, reference)
        sent = [*messages[:first], marker, *messages[last:]]
        over = json_size(sent) - limit
        if over <= 0 or room <= 0:
            break
        room -= over  # the marker message's own size, learnt now; shrink and plan again
    _store_media(work, messages[first:last])
    work.cut_by(_cap(work, limit))
    return sent


def _store_media(work: Bounder, left_out: list[Any]) -> None:
    """Store whole each medium of the messages left out (their text is in the
    prompt's stored text already)."""
    if not work.spill_on:
        return
    for message in left_out:
        content = message.get("content") if isinstance(message, dict) else None
        media = media_of(content) if isinstance(content, dict) else None
        if media is not None and not media.plain:
            work.record(work.policy.spill(media.payload(), tool=work.tool))


def _marker_message(
    work: Bounder, messages: list[Any], span: tuple[int, int], original: int, kept: int,
    reference: str | None,
) -> dict[str, Any]:
    """The message that stands for messages ``span`` (start, end): the marker, and
    which messages it stands for."""
    first, last = span
    standing = messages[first]
    role = standing.get("role") if isinstance(standing, dict) else None
    marker = work.policy.for_tool(work.tool).marker.render(
        original=original, kept=kept, reference=reference)
    text = (f"{marker}\n[toolcap: messages {first + 1} to {last} of {len(messages)} "
            "of this prompt are left out here]")
    return {"role": role if role in _ROLES else "user",
            "content": {"type": "text", "text": text}}


def _cap(work: Bounder, limit: int) -> str:
    """The cap whose limit the messages were kept to."""
    if work.policy.for_tool(work.tool).size_threshold == limit:
        return "size_threshold"
    return "batch_ceiling" if work.policy.config.batch_ceiling == limit else "wire_budget"
