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

from .._diagnostics import observe
from .._finalize import Policy, ToolResponse
from .._notice import Cap, emit_notice, notice_line
from ..core._json import json_size, project_json_blocks, wire_marker
from ..core._refs import reference_for
from ..core._sizes import human_size
from ..core._utf8 import sanitize, utf8_size
from ._common import base64_payload, keep_media

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

    def media_over(self, size: int) -> bool:
        return self.media_threshold is not None and size > self.media_threshold

    def replace_media(self, what: str, data: bytes, size: int) -> str:
        """Store a medium whole; return the text that stands in its place."""
        self.changed = True
        limit = self.media_threshold or 0
        text, reference = keep_media(self.policy, self.tool, what, data, size, limit, io=True)
        if reference:
            self.artifacts.append(reference)
        return text

    def notice(self, kept: int, original: int, cap: Cap) -> None:
        """The notice line of the core, for the caps this module adds."""
        emit_notice(notice_line(self.tool, kept, original, cap), to_stderr=self.policy.notices)

    @property
    def spill_on(self) -> bool:
        return self.policy.for_tool(self.tool).spill

    # -- text ----------------------------------------------------------------

    def share(self, slots: list[_Slot], is_error: bool) -> None:
        """Bound the text slots together: finalize, then the wire projection."""
        if not slots:
            return
        originals = [slot.text for slot in slots]
        response = ToolResponse(self.tool, originals, call_id=self.call_id, is_error=is_error)
        final = self.policy.finalize([response])[0]
        texts = list(final.parts or originals)
        if final.capped_by is not None:
            self.changed = True
            self.artifacts.extend(final.artifacts or ())
        if final.merged is not None:  # a collapse made several blocks one
            aligned = final.aligned()
            for slot in [s for s, text in zip(slots, aligned, strict=True) if text is None]:
                slot.remove()
            slots = [s for s, text in zip(slots, aligned, strict=True) if text is not None]
            originals = [slot.text for slot in slots]
        if self.wire_budget is not None:
            texts = self.project(slots, texts, originals, final.artifacts or ())
        for slot, text in zip(slots, texts, strict=False):
            if text is not slot.text:
                slot.put(text)
        if len(texts) < len(slots):  # collapsed into one block: the others go
            for slot in slots[len(texts) :]:
                slot.remove()

    def project(
        self, slots: list[_Slot], texts: list[str], originals: list[str], stored: tuple[str, ...]
    ) -> list[str]:
        """Fit the JSON of the text blocks into the wire budget, naming what it cuts."""
        assert self.wire_budget is not None
        overheads = [slot.overhead for slot in slots]
        projected = project_json_blocks(texts, self.wire_budget, overheads=overheads)
        collapsed = len(projected) != len(texts)
        cut = [
            index for index, text in enumerate(texts) if collapsed or projected[index] is not text
        ]
        if not cut:
            return texts
        self.changed = True
        # The projection may cut away the marker that names a block's artifact,
        # and a block only it cut was never stored: say where each one is kept.
        references = [ref for index in cut if (ref := self.keep(originals[index], stored))]
        if references and not collapsed:
            projected = project_json_blocks(
                texts, self.wire_budget, overheads=overheads, marker=wire_marker(references)
            )
        for index in range(len(projected)) if collapsed else cut:
            observe(
                "wire_projection",
                "content",
                projected[index],
                tool=self.tool,
                call_id=self.call_id,
                artifacts=tuple(self.artifacts),
                changed=True,
                wire_budget=self.wire_budget,
            )
        kept = sum(utf8_size(text) for text in projected)
        self.notice(kept, sum(utf8_size(text) for text in texts), "wire_budget")
        return projected

    def keep(self, original: str, stored: tuple[str, ...]) -> str | None:
        """The reference of ``original``: the one finalize stored, or a new one."""
        data = sanitize(original).encode("utf-8")
        reference = reference_for(data)
        if reference in stored:
            return reference
        if not self.spill_on:
            return None
        new = self.policy.spill(data, tool=self.tool)
        if new:
            self.artifacts.append(new)
        return new


def _overhead(obj: dict[str, Any], key: str) -> int:
    """JSON bytes of ``obj`` apart from the string under ``key``."""
    return json_size({**obj, key: ""}) - 2


def bound_call_tool_result_dict(
    result: dict[str, Any],
    policy: Policy,
    *,
    tool: str,
    call_id: str | None = None,
    media_threshold: int | object | None = ...,
    wire_budget: int | None = None,
) -> BoundedResult:
    """Bound a ``CallToolResult`` in its JSON form; the input is not modified.

    ``media_threshold`` defaults to ``policy.config.media_threshold`` (``None``
    means no limit on media). ``wire_budget`` (``None``: none) bounds the JSON
    bytes of the text fields together, after the model-facing caps.
    """
    content = result.get("content")
    if not isinstance(content, list):
        return BoundedResult(result, False, ())
    threshold = policy.config.media_threshold if media_threshold is ... else media_threshold
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
        elif kind in ("image", "audio") and isinstance(block.get("data"), str):
            size = len(block["data"])
            if work.media_over(size):
                what = f"{kind} {block.get('mimeType') or ''}".strip()
                text = work.replace_media(what, base64_payload(block["data"]), size)
                blocks[index] = {"type": "text", "text": text}
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            _resource_block(work, blocks, index, block, slots)
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
        work.policy.spill(_json_bytes(structured), tool=work.tool) if work.spill_on else None
    )
    note = f"[structuredContent of {human_size(size)} not sent: over the {human_size(bound)} limit"
    if reference:
        work.artifacts.append(reference)
        note += f"; kept as {reference}]"
    else:
        note += "; it could not be kept]"
    new["content"] = [*new["content"], {"type": "text", "text": note}]


def _json_bytes(value: Any) -> bytes:
    from ..core._json import dumps

    return dumps(value).encode("utf-8")


def _resource_block(
    work: _Bounder, blocks: list[Any], index: int, block: dict[str, Any], slots: list[_Slot]
) -> None:
    resource = block["resource"]
    uri = resource.get("uri", "")
    mime = resource.get("mimeType") or ""
    if isinstance(resource.get("text"), str):
        text = resource["text"]
        size = utf8_size(text)
        if work.media_over(size):
            what = f"embedded resource {uri} {mime}".strip()
            blocks[index] = {
                "type": "text",
                "text": work.replace_media(what, sanitize(text).encode("utf-8"), size),
            }
        else:
            overhead = json_size({**block, "resource": {**resource, "text": ""}}) - 2
            slots.append(_Slot(text, overhead, blocks, index, "resource"))
    elif isinstance(resource.get("blob"), str):
        size = len(resource["blob"])
        if work.media_over(size):
            what = f"embedded resource {uri} {mime}".strip()
            blocks[index] = {
                "type": "text",
                "text": work.replace_media(what, base64_payload(resource["blob"]), size),
            }


def bound_call_tool_result(
    result: T,
    policy: Policy,
    *,
    tool: str,
    call_id: str | None = None,
    media_threshold: int | object | None = ...,
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
    media_threshold: int | object | None = ...,
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
    media_threshold: int | object | None = ...,
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
    threshold = policy.config.media_threshold if media_threshold is ... else media_threshold
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
            size = len(entry["blob"])
            if work.media_over(size):
                what = f"resource {entry.get('uri', uri)} {entry.get('mimeType') or ''}".strip()
                text = work.replace_media(what, base64_payload(entry["blob"]), size)
                plain = {k: v for k, v in entry.items() if k not in ("blob", "mimeType")}
                entries[index] = {**plain, "mimeType": "text/plain", "text": text}
    work.share(slots, False)
    if not work.changed:
        return BoundedResult(result, False, ())
    entries = [entry for entry in entries if entry is not _REMOVED]
    return BoundedResult({**result, "contents": entries}, True, tuple(work.artifacts))
