"""Bounding MCP content: a ``CallToolResult`` and a ``resources/read`` result.

One implementation for the library and the proxy. The rules:

* Text blocks (and the text of small embedded resources) share the response's
  budget through the finalization seam (``Policy.finalize``, one call = one
  batch): the largest are cut first, to a common level; the number and order
  of blocks are kept; each cut block's full text is spilled once.
* Image and audio blocks and embedded resources are measured too: one over the
  media threshold is stored whole and replaced by a short text block naming
  its artifact, its type and its size.
* ``resource_link`` blocks, and block types this code does not know, pass.
* ``structuredContent`` passes when nothing was cut and it fits the tool's
  threshold; otherwise it is dropped (a cut result's structured twin would
  carry the uncut payload), stored, and a short text block says where it went.
* With a wire budget, the text fields are finally projected so that their
  JSON serialization fits it (:func:`toolcap.core._json.project_json_blocks`).

Results come in their JSON form (``dict``) or as the SDK's ``CallToolResult``;
the SDK is imported only for the latter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .._finalize import FinalizedResponse, Policy, ToolResponse
from .._wire import Source, blocks_fit, fit_wire, held_source
from ..core._default import DEFAULT, Default
from ..core._json import dumps, json_size
from ..core._media import Media, media_of, not_sent_note, resource_media
from ..core._refs import format_ref
from ..core._utf8 import sanitize
from ._common import keep_media

__all__ = [
    "BoundedResult",
    "bound_call_tool_result",
    "bound_call_tool_result_dict",
    "bound_read_resource_result",
    "bound_read_resource_result_dict",
    "resource_tool_name",
]

T = TypeVar("T")


@dataclass(frozen=True)
class BoundedResult:
    """A bounded MCP result and what was done to it.

    Attributes:
        result: the result to send (the same object when nothing changed).
        changed: whether anything was cut, replaced or dropped.
        artifacts: references of everything stored for this result, in order.
    """

    result: dict[str, Any]
    changed: bool
    artifacts: tuple[str, ...]


def resource_tool_name(uri: str) -> str:
    """The policy name for a resource: ``resource:<scheme>`` (``[tools."resource:file"]``)."""
    scheme = urlsplit(uri).scheme if isinstance(uri, str) else ""
    return f"resource:{scheme or 'unknown'}"


class _Slot:
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
        self._blocks[self._index] = _REMOVED


_REMOVED: Any = object()


class _Bounder:
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

    # -- media ---------------------------------------------------------------

    def replace_media(self, media: Media | None) -> str | None:
        """Store a medium over the media threshold whole; the text that stands in its place."""
        limit = self.media_threshold
        if media is None or limit is None or media.size <= limit:
            return None
        self.changed = True
        text, reference = keep_media(self.policy, self.tool, media, limit, io=True)
        self.record(reference)
        return text

    def record(self, reference: str | None) -> None:
        if reference and reference not in self.artifacts:
            self.artifacts.append(reference)

    @property
    def spill_on(self) -> bool:
        return self.policy.for_tool(self.tool).spill

    # -- text ----------------------------------------------------------------

    def share(self, slots: list[_Slot], is_error: bool) -> None:
        """Bound the text slots together, store what is cut once, then the wire step."""
        if not slots:
            return
        overheads = [slot.overhead for slot in slots]
        cut, join = self.plan(slots, overheads, is_error)
        if join:  # one block holds them all; see plan()
            joined = "\n".join(slot.text for slot in slots)
            for slot in slots[1:]:
                slot.remove()
            slots, overheads = slots[:1], overheads[:1]
            slots[0].put(joined)
            self.changed = True
        originals = [slot.text for slot in slots]
        whole = "\n".join(originals)
        decided = self.keep_whole(whole) if cut and len(slots) > 1 else None
        response = ToolResponse(self.tool, originals, self.call_id, is_error, decided)
        final = self.policy.finalize([response])[0]
        texts = list(final.parts or originals)
        if final.capped_by is not None:
            self.changed = True
            for reference in final.artifacts or ():
                self.record(reference)
        if final.merged is not None:  # a collapse made several blocks one
            for slot, text in zip(slots, final.aligned(), strict=True):
                if text is None:
                    slot.remove()
            slots, overheads = _kept(final, slots), _kept(final, overheads)
        if self.wire_budget is not None:
            fit = fit_wire(self.policy, self.tool, texts, self.wire_budget, whole=whole,
                           known=final.artifacts or (), overheads=overheads,
                           original_bytes=final.original_bytes, call_id=self.call_id,
                           sources=self.sources(final, originals))
            if fit.changed:
                self.changed = True
                self.record(fit.reference)
            texts = fit.texts
        for slot, text in zip(slots, texts, strict=True):
            if text is not slot.text:
                slot.put(text)

    def plan(self, slots: list[_Slot], overheads: list[int], is_error: bool) -> tuple[bool, bool]:
        """Whether a cap will cut these blocks, and whether they must be joined into one.

        They are joined when the wire cannot hold them even empty (thousands of
        blocks), or when its shares would be too small for a marker naming the
        artifact: then the model would get neither the text nor where it is. A
        dry run (no I/O) tells, with a stand-in reference of the real length.
        """
        if len(slots) <= 1:
            return False, False
        if self.wire_budget is not None and not blocks_fit(overheads, self.wire_budget):
            return True, True
        originals = [slot.text for slot in slots]
        probe = self.policy.guard([ToolResponse(self.tool, originals, is_error=is_error)])[0]
        if self.wire_budget is None:
            return probe.capped_by is not None, False
        fit = fit_wire(self.policy, self.tool, list(probe.parts or originals), self.wire_budget,
                       whole=None, known=[_STAND_IN], overheads=_kept(probe, overheads),
                       io=False, sources=self.sources(probe, originals))
        if fit.changed and not any(_STAND_IN in text for text in fit.texts):
            return True, True
        return probe.capped_by is not None or fit.changed, False

    def sources(self, final: FinalizedResponse, originals: list[str]) -> list[Source]:
        """Per delivered part, its original, for a wire cut made from it (a part a
        collapse made of several stands for them joined)."""
        if final.merged is not None:
            start, end = final.merged
            originals = [*originals[:start], "\n".join(originals[start:end]), *originals[end:]]
        tool_policy = self.policy.for_tool(self.tool)
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


def _overhead(obj: dict[str, Any], key: str) -> int:
    """JSON bytes of ``obj`` apart from the string under ``key``."""
    return json_size({**obj, key: ""}) - 2


def bound_call_tool_result_dict(
    result: dict[str, Any],
    policy: Policy,
    *,
    tool: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
) -> BoundedResult:
    """Bound a ``CallToolResult`` in its JSON form; the input is not modified.

    ``media_threshold``: ``"default"`` takes ``policy.config.media_threshold``;
    ``None`` means no limit on media. ``wire_budget`` (``None``: none) bounds the
    JSON bytes of the text fields together, after the model-facing caps.
    """
    content = result.get("content")
    if not isinstance(content, list):
        return BoundedResult(result, False, ())
    threshold = policy.config.media_threshold if media_threshold == DEFAULT else media_threshold
    work = _Bounder(
        policy, tool, call_id, threshold if isinstance(threshold, int) else None, wire_budget
    )
    blocks: list[Any] = list(content)
    slots: list[_Slot] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            slots.append(_Slot(block["text"], _overhead(block, "text"), blocks, index))
        elif kind in ("image", "audio", "resource"):
            note = work.replace_media(media_of(block))
            if note is not None:
                blocks[index] = {"type": "text", "text": note}
            elif kind == "resource" and isinstance(block["resource"].get("text"), str):
                # An embedded text under the media threshold is text like any other.
                resource = block["resource"]
                overhead = json_size({**block, "resource": {**resource, "text": ""}}) - 2
                slots.append(_Slot(resource["text"], overhead, blocks, index, "resource"))
    work.share(slots, bool(result.get("isError")))
    blocks = [block for block in blocks if block is not _REMOVED]
    new = {**result, "content": blocks}
    if result.get("structuredContent") is not None:
        _structured(work, new, result["structuredContent"])
    if not work.changed:
        return BoundedResult(result, False, ())
    return BoundedResult(new, True, tuple(work.artifacts))


def _structured(work: _Bounder, new: dict[str, Any], structured: Any) -> None:
    """Keep ``structuredContent`` only if nothing was cut and it fits; see the module doc."""
    if work.changed:
        del new["structuredContent"]  # the uncut twin of a cut result would undo the cut
        return
    limits = [work.policy.for_tool(work.tool).size_threshold, work.wire_budget]
    bound = min((limit for limit in limits if limit is not None), default=None)
    if bound is None:
        return
    size = json_size(structured)
    if size <= bound:
        return
    # Nothing else was cut, so the text blocks may not carry this data at all:
    # keep it, and tell the model where it is.
    del new["structuredContent"]
    work.changed = True
    reference = (
        work.policy.spill(dumps(structured).encode("utf-8"), tool=work.tool)
        if work.spill_on else None
    )
    work.record(reference)
    note = not_sent_note("structuredContent", size, bound, reference=reference,
                         tried=work.spill_on, limit_name="limit")
    new["content"] = [*new["content"], {"type": "text", "text": note}]


def bound_call_tool_result(
    result: T,
    policy: Policy,
    *,
    tool: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
) -> T:
    """Bound a ``CallToolResult``: a ``dict`` in JSON form or the SDK's model.

    Returns the same kind of value it was given (the same object when nothing
    changed). See :func:`bound_call_tool_result_dict` for the arguments.
    """
    return _same_kind(result, "CallToolResult", lambda data: bound_call_tool_result_dict(
        data, policy, tool=tool, call_id=call_id, media_threshold=media_threshold,
        wire_budget=wire_budget))


def _same_kind(result: T, kind: str, bound: Callable[[dict[str, Any]], BoundedResult]) -> T:
    """Bound ``result`` (a dict in JSON form or an SDK model) and return the same kind."""
    if isinstance(result, dict):
        return bound(result).result  # type: ignore[return-value]
    dump = getattr(result, "model_dump", None)
    if dump is None:
        raise TypeError(f"expected a {kind} or its dict form, got {type(result).__name__}")
    bounded = bound(dump(mode="json", by_alias=True, exclude_none=True))
    if not bounded.changed:
        return result
    return type(result).model_validate(bounded.result)  # type: ignore[attr-defined, no-any-return]


def bound_read_resource_result(
    result: T,
    policy: Policy,
    *,
    uri: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
) -> T:
    """:func:`bound_read_resource_result_dict`, returning the kind given (a dict or SDK model)."""
    return _same_kind(result, "ReadResourceResult", lambda data: bound_read_resource_result_dict(
        data, policy, uri=uri, call_id=call_id, media_threshold=media_threshold,
        wire_budget=wire_budget))


def bound_read_resource_result_dict(
    result: dict[str, Any],
    policy: Policy,
    *,
    uri: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
) -> BoundedResult:
    """Bound a ``resources/read`` result (its ``contents``) by the same rules.

    The policy is that of the tool named :func:`resource_tool_name` of ``uri``.
    A blob over the media threshold becomes a text entry for the same URI.
    """
    contents = result.get("contents")
    if not isinstance(contents, list):
        return BoundedResult(result, False, ())
    tool = resource_tool_name(uri)
    threshold = policy.config.media_threshold if media_threshold == DEFAULT else media_threshold
    work = _Bounder(
        policy, tool, call_id, threshold if isinstance(threshold, int) else None, wire_budget
    )
    entries: list[Any] = list(contents)
    slots: list[_Slot] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("text"), str):
            slots.append(_Slot(entry["text"], _overhead(entry, "text"), entries, index))
        elif isinstance(entry.get("blob"), str):
            text = work.replace_media(resource_media(entry, "resource", uri))
            if text is not None:
                plain = {k: v for k, v in entry.items() if k not in ("blob", "mimeType")}
                entries[index] = {**plain, "mimeType": "text/plain", "text": text}
    work.share(slots, False)
    if not work.changed:
        return BoundedResult(result, False, ())
    entries = [entry for entry in entries if entry is not _REMOVED]
    return BoundedResult({**result, "contents": entries}, True, tuple(work.artifacts))
