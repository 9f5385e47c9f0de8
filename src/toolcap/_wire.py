"""The wire step: fit what a boundary writes into its JSON-byte budget, naming what it cut.

The model-facing caps bound the UTF-8 text; the wire budget bounds its JSON
serialization (escapes included) on the pipe. One function does the step for
every writer (the MCP adapter and so the proxy, ``toolcap cap --json``).

The rule that keeps one truthful marker: a text the wire must cut is cut again
*from its original*, by the same cut the caps made (the tool's strategy,
marker and line snapping, or by structure for a JSON document), to the largest
size whose JSON fits the text's share of the budget and that is no longer than
what the caps delivered. So whatever caps applied, the model sees one marker
with the original's true size and what is really kept, naming the artifact once,
and never a marker inside a marker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._config import ToolPolicy
from ._diagnostics import observe
from ._finalize import Policy
from ._notice import emit_notice, notice_line
from .core._cut import CapResult
from .core._json import block_shares, project_json_blocks, refit_json
from .core._jsoncut import cut_by_format, cut_json
from .core._jsonsize import measure
from .core._marker import SHORT_MARKER
from .core._refs import reference_for
from .core._utf8 import decode, sanitize, utf8_size

__all__ = ["Source", "WireFit", "blocks_fit", "fit_wire", "held_source"]

#: Cuts one text's original again: ``source(limit, wire, reference)`` is the cut
#: to ``limit`` UTF-8 bytes, or with ``wire`` the cut by structure to ``limit``
#: JSON-escaped bytes (``None`` when the original is not a JSON document), its
#: marker naming ``reference``.
Source = Callable[[int, bool, "str | None"], "CapResult | None"]


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
    return block_shares([""] * len(overheads), budget, overheads=overheads) is not None


def held_source(policy: ToolPolicy, original: str | bytes) -> Source:
    """The :data:`Source` of an original held in memory: the seam's own cut of it."""
    text = decode(original) if isinstance(original, bytes) else sanitize(original)
    size = len(original) if isinstance(original, bytes) else None

    def source(limit: int, wire: bool, reference: str | None) -> CapResult | None:
        if wire:
            if policy.format == "text":
                return None
            return cut_json(text, limit, format=policy.format, strategy=policy.strategy,
                            head_ratio=policy.head_ratio, marker=policy.marker,
                            reference=reference, wire=True, original_bytes=size)
        return cut_by_format(original, limit, text=text, reference=reference,
                             **policy.cut_options)

    return source


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
    sources: Sequence[Source] | None = None,
) -> WireFit:
    """Fit the JSON of ``texts`` into ``budget`` bytes: a ``str`` is one JSON string,
    a sequence the texts of an array of text blocks (``overheads`` as for
    :func:`project_json_blocks`).

    ``sources`` (one per text) cut each text's original again; by default each
    text is its own original. A text that does not fit its share is replaced by
    its source's cut (see the module doc). ``whole`` is the response's full
    original (its parts joined by newlines; ``bytes`` are kept as they are), or
    ``None`` when it is not held (a stream): then only a single reference in
    ``known`` can name it. ``known`` are the references already stored for this
    response; when the whole is among them it is not stored again.
    ``original_bytes`` is the size the notice reports (default: the UTF-8 size
    of ``texts``). With ``io`` the step stores, prints the notice line and
    records the diagnostics; without, it only computes.
    """
    parts: list[str] = [texts] if isinstance(texts, str) else list(texts)
    if isinstance(texts, str):
        room = budget - 2
        size = room + 1 if len(texts) > room else measure(texts).json
        planned: tuple[list[int], list[int]] | None = ([size], [room])
    else:
        planned = block_shares(parts, budget, overheads=overheads)
    if planned is None:  # not even the empty blocks fit: one block says so
        reference, stored = _keep(policy, tool, whole, known, io)
        projected = project_json_blocks(parts, budget, overheads=overheads)
        _report(policy, tool, parts, projected, range(len(projected)), reference, budget,
                original_bytes, call_id, io)
        return WireFit(projected, True, reference, stored)
    sizes, shares = planned
    cut = [i for i, (size, share) in enumerate(zip(sizes, shares, strict=True)) if share < size]
    if not cut:
        return WireFit(parts, False)
    reference, stored = _keep(policy, tool, whole, known, io)
    tool_policy = policy.for_tool(tool)
    if sources is None:
        sources = [held_source(tool_policy, part) for part in parts]
    projected = list(parts)
    carry = 0  # bytes a cut could not use go to the next one
    for index in cut:
        allowed = shares[index] + carry
        text = _recut(sources[index], utf8_size(parts[index]), allowed, reference)
        projected[index] = text
        carry = allowed - measure(text).json
    _report(policy, tool, parts, projected, cut, reference, budget, original_bytes, call_id, io)
    return WireFit(projected, True, reference, stored)


def _recut(source: Source, utf8_limit: int, json_limit: int, reference: str | None) -> str:
    """One text cut again from its original: within ``utf8_limit`` UTF-8 bytes (what
    the caps delivered) and ``json_limit`` JSON bytes (quotes excluded); never empty
    while a short marker fits."""
    document = source(min(utf8_limit, json_limit), True, reference)
    if document is not None:
        text = document.text
    else:
        def cut_to(limit: int) -> str:
            result = source(limit, False, reference)
            assert result is not None
            return result.text

        text = refit_json(cut_to, utf8_limit, json_limit)
    if not text.strip():
        # An empty text block is refused by some model APIs: say at least that it is cut.
        text = next((short for short in (SHORT_MARKER, "…") if measure(short).json <= json_limit
                     and utf8_size(short) <= utf8_limit), text)
    return text


def _report(
    policy: Policy,
    tool: str,
    parts: Sequence[str],
    projected: Sequence[str],
    changed: Sequence[int] | range,
    reference: str | None,
    budget: int,
    original_bytes: int | None,
    call_id: str | None,
    io: bool,
) -> None:
    """The diagnostics and the notice line of a wire cut."""
    if not io:
        return
    for index in changed:
        observe("wire_projection", "content", projected[index], tool=tool, call_id=call_id,
                artifacts=(reference,) if reference else (), changed=True, wire_budget=budget)
    original = sum(map(utf8_size, parts)) if original_bytes is None else original_bytes
    kept = sum(map(utf8_size, projected))
    emit_notice(notice_line(tool, min(kept, original), original, "wire_budget"),
                to_stderr=policy.notices)


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
