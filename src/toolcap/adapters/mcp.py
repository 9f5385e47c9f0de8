"""Bounding MCP content: a ``CallToolResult``, a ``resources/read`` and a ``prompts/get`` result.

One implementation for the library and the proxy. The rules:

* Text blocks (and the text of small embedded resources) share the response's
  budget through the finalization seam (``Policy.finalize``, one call = one
  batch): the largest are cut first, to a common level; the number and order
  of blocks are kept; each cut block's full text is spilled once.
* Image and audio blocks and embedded resources are measured too: one over the
  media threshold is stored whole and replaced by a short text block naming
  its artifact, its type and its size.
* ``resource_link`` blocks, and block types this code does not know, pass.
* The limit bounds every text the model reads together: the notes standing for
  stored media and for a ``structuredContent`` over the limit are known before
  the text is cut, which leaves them room (:meth:`Bounder.reserve`).
* ``structuredContent`` is bounded on its own to the same limit, cut by
  structure (guided by the tool's ``outputSchema`` when one is given, so that
  it still validates; :mod:`toolcap.adapters._mcpstructured`).
* With a wire budget, the text fields are finally projected so that their
  JSON serialization fits it (:func:`toolcap.core._json.project_json_blocks`).
* A prompt's messages are bounded as one result's blocks, under the policy
  name ``prompt:<name>``; when they are too many for that without joining some
  into one, whole messages are kept instead, around one marker message
  (:mod:`toolcap.adapters._mcpprompt`): every message keeps its role.
* A changed result carries a record of its cut in ``_meta["toolcap/cut"]``
  (:mod:`toolcap.adapters._mcprecord`); a result another toolcap already bounded
  as tightly, measured to be within every limit here, passes untouched.

Results come in their JSON form (``dict``) or as the SDK's models; the SDK is
imported only for the latter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .._finalize import Policy
from ..core._default import DEFAULT, Default
from ..core._media import resource_media
from ..core._schemaguide import guide_for
from ._mcpbound import REMOVED, Bounder, Slot, block_slots, overhead, result_limit
from ._mcpfold import keep_all_notes
from ._mcpprompt import cut_messages, merges_messages
from ._mcprecord import PAYLOAD_FIELDS, bounded_upstream, upstream_record, with_record
from ._mcpstructured import bound_structured, reserve_note, store_early

__all__ = [
    "BoundedResult",
    "bound_call_tool_result",
    "bound_call_tool_result_dict",
    "bound_get_prompt_result",
    "bound_get_prompt_result_dict",
    "bound_read_resource_result",
    "bound_read_resource_result_dict",
    "prompt_tool_name",
    "resource_tool_name",
    "result_limit",
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


def prompt_tool_name(name: str) -> str:
    """The policy name for a prompt: ``prompt:<name>`` (``[tools."prompt:review"]``)."""
    return f"prompt:{name}"


def _start(
    policy: Policy,
    tool: str,
    call_id: str | None,
    media_threshold: int | Default | None,
    wire_budget: int | None,
    result: dict[str, Any],
    kind: str,
    upstream_reads: bool = False,
) -> Bounder | None:
    """The work on one result, or ``None`` when another toolcap bounded it already
    (its record says so, and it measures within every limit here)."""
    threshold = policy.config.media_threshold if media_threshold == DEFAULT else media_threshold
    media = threshold if isinstance(threshold, int) else None
    limit = result_limit(policy, tool, wire_budget)
    ceiling = min((x for x in (limit, media) if x is not None), default=None)
    if bounded_upstream(result, PAYLOAD_FIELDS[kind], limit, ceiling):
        return None
    work = Bounder(policy, tool, call_id, media, wire_budget)
    upstream = upstream_record(result) if upstream_reads else None
    work.upstream_ref = upstream["ref"] if upstream is not None else None
    return work


def _finish(work: Bounder, original: dict[str, Any], new: dict[str, Any],
            kind: str) -> BoundedResult:
    """The outcome: ``original`` when nothing changed, else ``new`` with its record."""
    if not work.changed:
        return BoundedResult(original, False, ())
    cap = work.caps[-1] if work.caps else "size_threshold"
    limit = result_limit(work.policy, work.tool, work.wire_budget)
    upstream = upstream_record(original) if work.upstream_ref is not None else None
    recorded = with_record(original, new, PAYLOAD_FIELDS[kind], cap=cap, limit=limit,
                           refs=work.artifacts, upstream=upstream,
                           measured=work.measured)
    return BoundedResult(recorded, True, tuple(work.artifacts))


def bound_call_tool_result_dict(
    result: dict[str, Any],
    policy: Policy,
    *,
    tool: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
    upstream_reads: bool = False,
    output_schema: dict[str, Any] | None = None,
) -> BoundedResult:
    """Bound a ``CallToolResult`` in its JSON form; the input is not modified.

    ``media_threshold``: ``"default"`` takes ``policy.config.media_threshold``;
    ``None`` means no limit on media. ``wire_budget`` (``None``: none) bounds the
    JSON bytes of the text fields together, after the model-facing caps.
    ``output_schema``: the tool's ``outputSchema``; when the cut can honour it
    (:func:`toolcap.core._schemaguide.guide_for`), a cut ``structuredContent``
    still validates against it. ``upstream_reads``: whether the references of
    another toolcap that cut this result before can be read through the caller
    (a proxy in front of a toolcap proxy); a second cut then names that
    original and states its size, not the size of the first cut.
    """
    content = result.get("content")
    if not isinstance(content, list):
        return BoundedResult(result, False, ())
    work = _start(policy, tool, call_id, media_threshold, wire_budget, result, "tools/call",
                   upstream_reads)
    if work is None:
        return BoundedResult(result, False, ())
    blocks: list[Any] = list(content)
    structured = result.get("structuredContent")
    early = store_early(work, structured)  # stored while the text is cut
    slots = block_slots(work, blocks)
    keep_all_notes(work, bool(slots))
    guide = guide_for(output_schema) if output_schema is not None and structured is not None \
        else None
    room = reserve_note(work, structured, guide, slots, early)  # the text leaves it room
    work.share(slots, bool(result.get("isError")))
    new = {**result, "content": [block for block in blocks if block is not REMOVED]}
    if structured is not None:
        bound_structured(work, new, structured, guide, early, room)
    return _finish(work, result, new, "tools/call")


def bound_call_tool_result(
    result: T,
    policy: Policy,
    *,
    tool: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
    output_schema: dict[str, Any] | None = None,
) -> T:
    """Bound a ``CallToolResult``: a ``dict`` in JSON form or the SDK's model.

    Returns the same kind of value it was given (the same object when nothing
    changed). See :func:`bound_call_tool_result_dict` for the arguments.
    """
    return _same_kind(result, "CallToolResult", lambda data: bound_call_tool_result_dict(
        data, policy, tool=tool, call_id=call_id, media_threshold=media_threshold,
        wire_budget=wire_budget, output_schema=output_schema))


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
    upstream_reads: bool = False,
) -> BoundedResult:
    """Bound a ``resources/read`` result (its ``contents``) by the same rules.

    The policy is that of the tool named :func:`resource_tool_name` of ``uri``.
    A blob over the media threshold becomes a text entry for the same URI.
    """
    contents = result.get("contents")
    if not isinstance(contents, list):
        return BoundedResult(result, False, ())
    tool = resource_tool_name(uri)
    work = _start(policy, tool, call_id, media_threshold, wire_budget, result, "resources/read",
                   upstream_reads)
    if work is None:
        return BoundedResult(result, False, ())
    entries: list[Any] = list(contents)
    slots: list[Slot] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("text"), str):
            slots.append(Slot(entry["text"], overhead(entry, "text"), entries, index))
        elif isinstance(entry.get("blob"), str):
            text = work.replace_media(resource_media(entry, "resource", uri))
            if text is not None:
                plain = {k: v for k, v in entry.items() if k not in ("blob", "mimeType")}
                entries[index] = {**plain, "mimeType": "text/plain", "text": text}
                work.noted.append((entries, index, 0))
    keep_all_notes(work, bool(slots))
    work.share(slots, False)
    new = {**result, "contents": [entry for entry in entries if entry is not REMOVED]}
    return _finish(work, result, new, "resources/read")


def bound_get_prompt_result_dict(
    result: dict[str, Any],
    policy: Policy,
    *,
    name: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
    upstream_reads: bool = False,
) -> BoundedResult:
    """Bound a ``prompts/get`` result: its messages' content blocks as one result's
    blocks, under the policy of the tool named :func:`prompt_tool_name` of ``name``.

    Each message keeps its role and one block. Messages too many to share the
    budget one by one are kept whole, a head and a tail around one marker message
    naming those left out, within the limit as compact JSON.
    """
    messages = result.get("messages")
    if not isinstance(messages, list):
        return BoundedResult(result, False, ())
    tool = prompt_tool_name(name)
    work = _start(policy, tool, call_id, media_threshold, wire_budget, result, "prompts/get",
                   upstream_reads)
    if work is None:
        return BoundedResult(result, False, ())
    blocks: list[Any] = []
    envelopes: list[int] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        blocks.append(content)
        envelopes.append(overhead(message, "content") if isinstance(content, dict) else 0)
    slots = block_slots(work, blocks, envelopes)
    keep_all_notes(work, bool(slots))
    limit = result_limit(policy, tool, wire_budget)
    if limit is not None and merges_messages(work, slots, limit):
        pairs = [(message, block) for message, block in zip(messages, blocks, strict=True)
                 if block is not REMOVED]  # a message of a folded media note goes
        whole = [{**message, "content": block} if isinstance(message, dict)
                 and block is not message.get("content") else message
                 for message, block in pairs]
        sent = cut_messages(work, whole, slots, limit, [message for message, _ in pairs])
        if sent is not None:
            return _finish(work, result, {**result, "messages": sent}, "prompts/get")
    work.share(slots, False)
    kept: list[Any] = []
    for message, block in zip(messages, blocks, strict=True):
        if block is REMOVED:
            continue
        changed = isinstance(message, dict) and block is not message.get("content")
        kept.append({**message, "content": block} if changed else message)
    return _finish(work, result, {**result, "messages": kept}, "prompts/get")


def bound_get_prompt_result(
    result: T,
    policy: Policy,
    *,
    name: str,
    call_id: str | None = None,
    media_threshold: int | Default | None = DEFAULT,
    wire_budget: int | None = None,
) -> T:
    """:func:`bound_get_prompt_result_dict`, returning the kind given (a dict or SDK model)."""
    return _same_kind(result, "GetPromptResult", lambda data: bound_get_prompt_result_dict(
        data, policy, name=name, call_id=call_id, media_threshold=media_threshold,
        wire_budget=wire_budget))
