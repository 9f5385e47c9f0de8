"""Compaction of a conversation's older tool outputs: what to mask, and the placeholder.

Pure: no I/O, no message shapes. A caller (``toolcap.compact``, or a command over
saved session files) reads its conversation into a list of :class:`Output` (one
per tool output, oldest first: its measured size, the turn it answers, whether it
is already a placeholder or its tool excluded), asks :func:`plan_compaction`
which to mask, stores those originals, and writes :func:`render_placeholder`'s
text in their place.

The rules (DESIGN.md, Compaction):

* nothing changes while the outputs together measure at most ``trigger``;
* above it, the oldest outputs are masked, whole, until the total is at most
  ``target`` (the low watermark), so the conversation's prefix, and the
  provider's prompt cache, changes only when the trigger is crossed again;
* the outputs of the latest turn, the newest outputs that fit in
  ``keep_recent`` together, excluded tools and already masked outputs are never
  masked; an output whose original could not be stored is never masked either
  (``unavailable``).

Because a masked output is recognised as such (:func:`is_placeholder`) and the
total after a compaction is at most ``target`` (below ``trigger``), compacting a
compacted conversation changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._refs import PREFIX, REFERENCE_LENGTH
from ._sizes import human_size
from ._utf8 import sanitize

__all__ = [
    "PLACEHOLDER_START",
    "SAMPLE_REFERENCE",
    "Output",
    "Plan",
    "cut_marker_of",
    "is_placeholder",
    "plan_compaction",
    "render_placeholder",
]

#: Every placeholder starts with this; nothing that starts with it is masked again.
PLACEHOLDER_START = "[toolcap: compacted "

_PREVIEW_CHARS = 48
# Characters alone do not bound bytes (up to 4 each): each piece is held to bytes too,
# so a placeholder stays short whatever the tool name and the text are made of.
_PREVIEW_BYTES = 96
_TOOL_BYTES = 64
_TOOL_CHARS = 64
# The cut marker of toolcap's default template, as the finalizer writes it: bounded
# pieces only, so a search of a hostile text stays linear.
_CUT_MARKER = re.compile(
    r"\[toolcap: output truncated, kept [0-9.]{1,8} [KMG]?B of (?P<original>[0-9.]{1,8} [KMG]?B)"
    r"(?:; full output: (?P<reference>toolcap:[0-9a-f]{32}))?"
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Output:
    """One tool output of a conversation, as the planning sees it.

    Attributes:
        size: its measured size now (bytes or tokens: the caller's measure).
        turn: the number of the assistant turn it answers (0, 1, …, in order).
        placeholder: the size its placeholder would measure.
        masked: it is already a placeholder.
        excluded: its tool is one whose outputs are never masked.
    """

    size: int
    turn: int
    placeholder: int = 0
    masked: bool = False
    excluded: bool = False


@dataclass(frozen=True)
class Plan:
    """What to mask, by position in the outputs, oldest first.

    ``before`` is the total measured now, ``after`` the total once ``mask`` is
    done; ``protected`` are the positions kept by the latest turn or
    ``keep_recent``; ``reason`` says in words why the plan is what it is.
    """

    before: int
    after: int
    mask: tuple[int, ...]
    protected: frozenset[int]
    reason: str


def plan_compaction(
    outputs: Sequence[Output],
    *,
    trigger: int,
    target: int,
    keep_recent: int,
    unavailable: frozenset[int] = frozenset(),
    latest_turn: bool = True,
) -> Plan:
    """Decide which outputs to mask (see the module's rules). O(number of outputs).

    ``latest_turn=False`` leaves the latest turn to ``keep_recent`` alone: for a saved
    session, whose latest output may be the very one that made it fail.
    """
    if target > trigger:
        raise ValueError(f"the target ({target}) must not be above the trigger ({trigger})")
    before = sum(output.size for output in outputs)
    protected = _protected(outputs, keep_recent, latest_turn=latest_turn)
    if before <= trigger:
        return Plan(before, before, (), protected, "at or below the trigger: nothing to do")
    total = before
    mask: list[int] = []
    for index, output in enumerate(outputs):
        if total <= target:
            break
        if (output.masked or output.excluded or index in protected or index in unavailable
                or output.placeholder >= output.size):
            continue
        mask.append(index)
        total -= output.size - output.placeholder
    if total <= target:
        reason = f"over the trigger: masked the {len(mask)} oldest outputs to reach the target"
    else:
        reason = ("over the trigger, and still over the target: the other outputs are"
                  " protected (latest turn, keep_recent, excluded tools), already masked,"
                  " or could not be stored")
    return Plan(before, total, tuple(mask), protected, reason)


def _protected(outputs: Sequence[Output], keep_recent: int, *,
               latest_turn: bool) -> frozenset[int]:
    """The latest turn's outputs, and the newest outputs that fit in ``keep_recent``."""
    if not outputs:
        return frozenset()
    kept: set[int] = set()
    if latest_turn:
        latest = max(output.turn for output in outputs)
        kept = {index for index, output in enumerate(outputs) if output.turn == latest}
    room = keep_recent
    for index in range(len(outputs) - 1, -1, -1):
        size = outputs[index].size
        if size > room:
            break
        room -= size
        kept.add(index)
    return frozenset(kept)


def is_placeholder(text: object) -> bool:
    """Whether ``text`` is a compaction placeholder (and so is never masked again)."""
    return isinstance(text, str) and text.startswith(PLACEHOLDER_START)


def cut_marker_of(text: str) -> tuple[str, str | None] | None:
    """``(original size, reference or None)`` named by the first cut marker in ``text``.

    A capped output already names its full original: the placeholder of such an
    output names it too, so the model is told the true size (and no marker ends
    up inside another).
    """
    found = _CUT_MARKER.search(text)
    if found is None:
        return None
    return found.group("original"), found.group("reference")


def _flat(text: str) -> str:
    """``text`` on one line, encodable, with no bracket: so no marker ever appears
    inside the placeholder, and the placeholder is one bracketed text."""
    flat = _SPACE.sub(" ", sanitize(text)).strip()
    return flat.replace("[", "(").replace("]", ")").replace('"', "'")


def _preview(text: str, *, end: bool) -> str:
    window = text[-4 * _PREVIEW_CHARS:] if end else text[: 4 * _PREVIEW_CHARS]
    flat = _flat(window)
    return _within(flat[-_PREVIEW_CHARS:], _PREVIEW_BYTES, end=True) if end else _within(
        flat[:_PREVIEW_CHARS], _PREVIEW_BYTES, end=False)


def _within(text: str, limit: int, *, end: bool) -> str:
    """The start (or with ``end`` the end) of valid ``text`` in at most ``limit`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return (data[-limit:] if end else data[:limit]).decode("utf-8", "ignore")


def render_placeholder(
    *,
    tool: str,
    size: int,
    reference: str,
    text: str,
    blocks: int = 0,
    cut_from: tuple[str, str | None] | None = None,
) -> str:
    """The one short text that stands in a masked output's place.

    Names the tool, the size of what was stored (``size`` bytes; ``blocks`` when
    the output was a list of blocks), the reference, the start and end of its
    ``text``, and how to read it back. ``cut_from`` is what :func:`cut_marker_of`
    found in an output that a cap had already cut: the true original's size and
    reference. At most about 500 bytes whatever the inputs.
    """
    name = _within(_flat(tool[: 2 * _TOOL_CHARS])[:_TOOL_CHARS], _TOOL_BYTES, end=False)
    name = name or "a tool"
    what = f"{human_size(size)}" + (f" in {blocks} blocks" if blocks else "")
    if cut_from is not None:
        original, full = cut_from
        what += f", cut from {original}" + (f" (full output {full})" if full else "")
    head, tail = _preview(text, end=False), _preview(text, end=True)
    preview = f' Starts "{head}", ends "{tail}".' if text else ""
    return (
        f"{PLACEHOLDER_START}{name} output of {what}; kept as {reference}.{preview}"
        f" Read it back with read_artifact or `toolcap artifacts cat {reference}`.]"
    )


#: A reference of the right length, for measuring a placeholder before storing.
SAMPLE_REFERENCE = PREFIX + "0" * (REFERENCE_LENGTH - len(PREFIX))
