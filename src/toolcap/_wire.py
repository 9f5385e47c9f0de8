"""The wire step: fit what a boundary writes into its JSON-byte budget, naming what it cut.

The model-facing caps bound the UTF-8 text; the wire budget bounds its JSON
serialization (escapes included) on the pipe. One function does the step for
every writer (the MCP adapter and so the proxy, ``toolcap cap --json``):
project the texts, keep the whole original once when the projection dropped
anything, and project again with a marker naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._diagnostics import observe
from ._finalize import Policy
from ._notice import emit_notice, notice_line
from .core._json import (
    DEFAULT_WIRE_MARKER,
    TEXT_BLOCK_OVERHEAD,
    project_json_blocks,
    project_json_text,
    wire_marker,
)
from .core._jsoncut import cut_json
from .core._refs import reference_for
from .core._utf8 import decode, sanitize, utf8_size

__all__ = ["WireFit", "blocks_fit", "fit_wire"]


@dataclass(frozen=True)
class WireFit:
    """What the wire step did.

    Attributes:
        texts: the texts to write, one per input text (the same objects where
            nothing was cut), or a single text when even the empty blocks did
            not fit.
        changed: whether the projection cut anything.
        reference: the artifact naming the whole original, when something was
            cut and it is kept.
        stored: the reference this step stored itself (``None`` when it
            stored nothing: nothing cut, already kept, or keeping failed).
    """

    texts: list[str]
    changed: bool
    reference: str | None = None
    stored: str | None = None


def blocks_fit(overheads: Sequence[int], budget: int) -> bool:
    """Whether that many blocks, all empty, fit ``budget`` JSON bytes.

    When they do not (thousands of blocks), no share of the budget is left for
    their text: the caller joins them into one block before the caps apply.
    """
    if len(overheads) <= 1:
        return True
    empty = project_json_blocks([""] * len(overheads), budget, overheads=overheads)
    return len(empty) == len(overheads)


def fit_wire(
    policy: Policy,
    tool: str,
    texts: str | Sequence[str],
    budget: int,
    *,
    whole: str | bytes | None,
    known: Sequence[str] = (),
    overheads: Sequence[int] | None = None,
    original_bytes: int | None = None,
    call_id: str | None = None,
    io: bool = True,
) -> WireFit:
    """Fit the JSON of ``texts`` into ``budget`` bytes: a ``str`` is one JSON string,
    a sequence the texts of an array of text blocks (``overheads`` as for
    :func:`project_json_blocks`).

    ``whole`` is the response's full original (its parts joined by newlines;
    ``bytes`` are kept as they are), or ``None`` when it is not held (a
    stream): then only a single
    reference in ``known`` can name it. ``known`` are the references already
    stored for this response; when the whole is among them it is not stored
    again. ``original_bytes`` is the size the notice reports (default: the
    UTF-8 size of ``texts``). With ``io`` the step stores, prints the notice
    line and records the diagnostics; without, it only computes.
    """
    parts: Sequence[str] = [texts] if isinstance(texts, str) else texts

    wire_cut = policy.for_tool(tool).wire_cut  # the tool's strategy reaches the wire

    def project(marker: str = DEFAULT_WIRE_MARKER) -> list[str]:
        if isinstance(texts, str):
            return [project_json_text(texts, budget, marker=marker, policy=wire_cut)]
        return project_json_blocks(texts, budget, overheads=overheads, marker=marker,
                                   policy=wire_cut)

    projected = project()
    collapsed = len(projected) != len(parts)
    cut = [i for i, text in enumerate(parts) if collapsed or projected[i] is not text]
    if not cut:
        return WireFit(list(parts), False)
    reference, stored = _keep(policy, tool, whole, known, io)
    structural = _json_fit(policy, tool, texts, budget, overheads, whole, reference)
    if structural is not None:
        projected = structural
    elif reference is not None and not collapsed:
        projected = project(wire_marker([reference]))
    if io:
        for index in range(len(projected)) if collapsed else cut:
            observe("wire_projection", "content", projected[index], tool=tool, call_id=call_id,
                    artifacts=(reference,) if reference else (), changed=True,
                    wire_budget=budget)
        original = sum(map(utf8_size, parts)) if original_bytes is None else original_bytes
        kept = sum(map(utf8_size, projected))
        emit_notice(notice_line(tool, min(kept, original), original, "wire_budget"),
                    to_stderr=policy.notices)
    return WireFit(projected, True, reference, stored)


def _json_fit(
    policy: Policy,
    tool: str,
    texts: str | Sequence[str],
    budget: int,
    overheads: Sequence[int] | None,
    whole: str | bytes | None,
    reference: str | None,
) -> list[str] | None:
    """A single text whose original is a JSON document, cut by structure on the wire.

    Cut from the original (so the notes' pointers name the original), in
    JSON-escaped bytes, to no more than the caps already allowed (escapes only
    add bytes, so the UTF-8 bound holds too). ``None`` when this does not apply:
    several texts, the original not held, or not a document.
    """
    tool_policy = policy.for_tool(tool)
    if whole is None or tool_policy.format == "text":
        return None
    if isinstance(texts, str):
        single, room = texts, budget - 2
    elif len(texts) == 1:
        overhead = overheads[0] if overheads else TEXT_BLOCK_OVERHEAD
        single, room = texts[0], budget - 4 - overhead  # brackets and quotes
    else:
        return None
    source = decode(whole) if isinstance(whole, bytes) else sanitize(whole)
    result = cut_json(source, min(room, utf8_size(single)), format=tool_policy.format,
                      strategy=tool_policy.strategy, head_ratio=tool_policy.head_ratio,
                      marker=tool_policy.marker, reference=reference, wire=True,
                      original_bytes=len(whole) if isinstance(whole, bytes) else None)
    return None if result is None else [result.text]


def _keep(
    policy: Policy, tool: str, whole: str | bytes | None, known: Sequence[str], io: bool
) -> tuple[str | None, str | None]:
    """The reference of the whole original, storing it if it is not kept yet."""
    if whole is None:
        return (known[0] if len(known) == 1 else None), None
    data = whole if isinstance(whole, bytes) else sanitize(whole).encode("utf-8")
    reference = reference_for(data)
    if reference in known:
        return reference, None
    if not io or not policy.for_tool(tool).spill:
        return None, None
    stored = policy.spill(data, tool=tool)
    return stored, stored
