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
left out is stored whole, and links (and content of kinds this code does not know)
as one JSON array; the marker message counts what is left out that is not text.
The messages sent measure, as compact JSON, within the result's limit: the
marker message and any media notes included. A marker message too long for the
limit takes a shorter form: its second line alone, then the short marker, then
nothing (as a cut too small for the short marker keeps nothing).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._finalize import ToolResponse
from ..core._json import json_size
from ..core._jsonraw import dumps_utf8
from ..core._marker import SHORT_MARKER
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
    work: Bounder, messages: list[Any], slots: list[Slot], limit: int,
    received: list[Any] | None = None,
) -> list[Any] | None:
    """``messages`` (media over the threshold already replaced by their notes) cut
    to a head and a tail of whole messages around one marker message, their compact
    JSON within ``limit`` bytes; ``None`` when they cannot be measured (nested too
    deeply), for the shared cut to take them. ``received``: the messages as they
    came (default ``messages``), whose kinds of content the marker message names."""
    try:
        sizes = [json_size(message) for message in messages]
    except RecursionError:
        return None
    if 2 + sum(sizes) + len(sizes) - 1 <= limit:
        return list(messages)  # only media were replaced; the whole prompt fits
    received = messages if received is None else received
    whole = work.keep_whole("\n".join(slot.text for slot in slots)) if slots else None
    reference = whole[0] if whole else None
    others = _keep_others(work, received)
    tool_policy = work.policy.for_tool(work.tool)
    original = json_size(messages)
    first, last, sent = 0, len(messages), []
    for form in _FORMS:  # the marker message as long as the limit lets it be
        room = limit - 2  # the list's brackets
        while True:
            # Each kept message also costs the comma after it, as plan_parts counts.
            first, last, kept = plan_parts(sizes, max(0, room), tool_policy.strategy,
                                           tool_policy.head_ratio)
            left_out = _left_out((first, last), len(messages), received, others)
            marker = _marker_message(work, messages[first], form, left_out,
                                     (original, kept), reference)
            sent = [*messages[:first], marker, *messages[last:]]
            over = json_size(sent) - limit
            if over <= 0 or room <= 0:
                break
            room -= over  # the marker message's own size, learnt now; shrink and plan again
        if over <= 0:
            break
    else:  # not even the short marker fits: as a cut too small for it, nothing
        first, last, sent = 0, len(messages), []
    _store_media(work, messages[first:last])
    if others is not None and any(n in others[1] for n in range(first, last)):
        work.record(others[0])
    work.cut_by(_cap(work, limit))
    return sent


#: The marker message's forms, longest first: the marker and the line naming the
#: messages left out; that line alone, naming the artifact; the short marker.
_FORMS = ("full", "line", "short")
#: The kinds of content a marker message names among the messages left out.
_KINDS = ("image", "audio", "resource", "resource_link")


def _keep_others(work: Bounder, received: list[Any]) -> tuple[str, set[int]] | None:
    """Store the blocks of the prompt that hold neither text nor a payload (links,
    kinds this code does not know), with their message's number, as compact JSON:
    the reference and the indexes of their messages (``None``: none, or not stored)."""
    found = [(index, content) for index, content in enumerate(_contents(received))
             if _kind(content) in ("resource_link", "other")]
    if not found or not work.spill_on:
        return None
    try:
        data = dumps_utf8([{"message": index + 1, "content": content} for index, content in found])
    except (RecursionError, TypeError, ValueError):
        return None  # nested too deeply to write: counted and named, not kept
    reference = work.policy.spill(data, tool=work.tool)
    return None if reference is None else (reference, {index for index, _ in found})


def _contents(messages: list[Any]) -> list[Any]:
    return [message.get("content") if isinstance(message, dict) else None
            for message in messages]


def _kind(content: Any) -> str:
    kind = content.get("type") if isinstance(content, dict) else None
    return kind if kind == "text" or kind in _KINDS else "other"


def _left_out(span: tuple[int, int], total: int, received: list[Any],
              others: tuple[str, set[int]] | None) -> str:
    """The line's words for messages ``span`` (start, end) of ``total``: which they
    are, and the content among them that is not text (where it is kept)."""
    first, last = span
    counts = Counter(_kind(content) for content in _contents(received[first:last]))
    named = ", ".join(f"{counts[kind]} {kind}" for kind in (*_KINDS, "other") if counts[kind])
    words = f"messages {first + 1} to {last} of {total} of this prompt are left out here"
    if named:
        words += f", with {named} content"
        if others is not None and any(n in others[1] for n in range(first, last)):
            words += f" (links and other content kept as {others[0]})"
    return words


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
    work: Bounder, standing: Any, form: str, left_out: str, sizes: tuple[int, int],
    reference: str | None,
) -> dict[str, Any]:
    """The message that stands for the messages left out (``standing``, the first of
    them, gives its role), in ``form`` (one of :data:`_FORMS`)."""
    role = standing.get("role") if isinstance(standing, dict) else None
    if form == "full":
        original, kept = sizes
        marker = work.policy.for_tool(work.tool).marker.render(
            original=original, kept=kept, reference=reference)
        text = f"{marker}\n[toolcap: {left_out}]"
    elif form == "line":
        where = f"; full output: {reference}" if reference else ""
        text = f"[toolcap: {left_out}{where}]"
    else:
        text = SHORT_MARKER
    return {"role": role if role in _ROLES else "user",
            "content": {"type": "text", "text": text}}


def _cap(work: Bounder, limit: int) -> str:
    """The cap whose limit the messages were kept to."""
    if work.policy.for_tool(work.tool).size_threshold == limit:
        return "size_threshold"
    return "batch_ceiling" if work.policy.config.batch_ceiling == limit else "wire_budget"
