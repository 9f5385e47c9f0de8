"""What every conversation adapter shares: reading SDK objects and dicts alike,
grouping tool results into batches, media and text blocks, and the one call to the
finalization seam per batch.

An adapter only knows its format's shape: which item is an assistant turn, which
is a tool result, where a result's content is and how to put a new one back. The
rest, and so the rules, are here, once.
"""

from __future__ import annotations

import base64
import binascii
import copy
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._finalize import FinalizedResponse, Policy, ToolResponse
from .._notice import emit_notice, notice_line
from ..core._sizes import human_size
from ..core._utf8 import sanitize, utf8_size

__all__ = [
    "UNKNOWN_TOOL",
    "Entry",
    "Result",
    "bound_contents",
    "call_names",
    "changes",
    "default_policy",
    "field",
    "latest_batch",
    "listed",
    "media_of",
    "media_size",
    "resolve",
    "text_of",
    "tool_name",
    "turn_batches",
    "with_field",
]

#: The policy name of a result whose call could not be found (the ``"*"`` defaults).
UNKNOWN_TOOL = "unknown"

_default: Policy | None = None
_default_lock = threading.Lock()


def default_policy() -> Policy:
    """The policy the adapters use when given none: configuration files and environment.

    Loaded on first use and kept, so the configuration is read once per process.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = Policy.load()
        return _default


def resolve(policy: Policy | None) -> Policy:
    """``policy``, or the default one."""
    return default_policy() if policy is None else policy


# -- reading and rebuilding items of any SDK ---------------------------------------


def field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a mapping (the SDKs' TypedDict params), else ``obj.key``."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def with_field(obj: Any, key: str, value: Any) -> Any:
    """A copy of ``obj`` with ``key`` set to ``value``; ``obj`` itself is not touched.

    A mapping becomes a ``dict``; a pydantic model (an SDK response type, a
    LangChain message) stays of its type.
    """
    if isinstance(obj, Mapping):
        return {**obj, key: value}
    model_copy = getattr(obj, "model_copy", None)
    if callable(model_copy):
        return model_copy(update={key: value})
    duplicate = copy.copy(obj)
    setattr(duplicate, key, value)
    return duplicate


def listed(value: Any) -> Sequence[Any]:
    """``value`` if it is a list or tuple, else nothing: a conversation read from a
    file may hold anything where a list of calls or blocks belongs."""
    return value if isinstance(value, (list, tuple)) else ()


def call_names(calls: Iterable[tuple[Any, Any]]) -> dict[str, str]:
    """Call id → tool name, from ``(id, name)`` pairs; a pair that is not two strings is
    left out (a hostile or damaged file must not break the reading)."""
    return {call_id: name for call_id, name in calls
            if isinstance(call_id, str) and isinstance(name, str) and name}


def tool_name(names: Mapping[str, str], call_id: str | None, fallback: Any = None) -> str:
    """The tool a result answers: its call's name, else ``fallback``, else ``"unknown"``."""
    name = names.get(call_id) if call_id is not None else None
    if name is None and isinstance(fallback, str) and fallback:
        name = fallback
    return name or UNKNOWN_TOOL


# -- content blocks ----------------------------------------------------------------

_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def text_of(block: Any) -> str | None:
    """The text of a text block (any SDK's spelling), or of a bare string part."""
    if isinstance(block, str):
        return block
    if field(block, "type") in _TEXT_TYPES:
        text = field(block, "text")
        if isinstance(text, str):
            return text
    return None


def _with_text(block: Any, text: str) -> Any:
    return text if isinstance(block, str) else with_field(block, "text", text)


@dataclass(frozen=True)
class Media:
    """A payload found in a block: its text (base64 unless ``plain``) and what it is."""

    data: str
    what: str
    plain: bool = False


def _data_url(url: object) -> tuple[str, str] | None:
    """``(base64 text, media type)`` of a ``data:…;base64,…`` URL."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header, _, data = url.partition(",")
    if not header.endswith(";base64"):
        return None
    return data, header[len("data:") : -len(";base64")]


def media_of(block: Any) -> Media | None:
    """The base64 payload of an image, audio or file block, in any SDK's spelling.

    Known shapes: Anthropic (``source: {type: base64, data}``), LangChain standard
    blocks (``base64`` or ``source_type: base64`` with ``data``), OpenAI
    (``image_url`` data URLs, ``file_data``, ``input_audio``), MCP (``data``).
    A block that points elsewhere (a URL, a file id) carries no payload: ``None``.
    """
    if isinstance(block, str):
        return None
    kind = field(block, "type")
    if kind in _TEXT_TYPES or kind is None:
        return None
    mime = field(block, "mime_type") or field(block, "media_type") or field(block, "mimeType")
    source = field(block, "source")
    plain = False
    if source is not None and field(source, "type") in ("base64", "text"):
        data = field(source, "data")
        mime = field(source, "media_type") or mime
        plain = field(source, "type") == "text"  # a document's plain-text source
    elif isinstance(field(block, "base64"), str):
        data = field(block, "base64")
    elif isinstance(field(block, "data"), str):
        data = field(block, "data")
    elif field(block, "file_data") is not None:
        data = field(block, "file_data")
        parsed = _data_url(data)
        if parsed is not None:
            data, mime = parsed
    elif field(block, "input_audio") is not None:
        data = field(field(block, "input_audio"), "data")
        mime = mime or field(field(block, "input_audio"), "format")
    else:
        url = field(block, "image_url")
        parsed = _data_url(field(url, "url") if not isinstance(url, str) else url)
        if parsed is None:
            return None
        data, mime = parsed
    if not isinstance(data, str):
        return None
    what = f"{kind} {mime}" if isinstance(mime, str) and mime else str(kind)
    return Media(data, what, plain)


def media_size(media: Media) -> int:
    """The size a medium is measured by: the UTF-8 bytes of its text as sent (base64 is ASCII)."""
    return utf8_size(media.data) if media.plain else len(media.data)


def base64_payload(data: str) -> bytes:
    """The bytes a base64 text stands for; a text that is not base64 is kept as it was sent."""
    try:
        return base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return sanitize(data).encode("utf-8")


def keep_media(
    policy: Policy, tool: str, what: str, payload: bytes, size: int, limit: int, *, io: bool
) -> tuple[str, str | None]:
    """Keep a medium over the media limit; the text that replaces it, and its reference.

    ``size`` is the medium's size as sent (its base64 text). Without ``io``
    nothing is stored or printed (the send-boundary guard).
    """
    text = f"[{what} of {human_size(size)} not sent: over the {human_size(limit)} media limit"
    if not io:
        return text + "]", None
    spill = policy.for_tool(tool).spill
    reference = policy.spill(payload, tool=tool) if spill else None
    if reference:
        text += f"; kept as {reference}]"
    else:
        text += "; it could not be kept]" if spill else "]"
    emit_notice(notice_line(tool, utf8_size(text), size, "media_threshold"),
                to_stderr=policy.notices)
    return text, reference


def _media_note(policy: Policy, tool: str, media: Media, limit: int, io: bool) -> str:
    """Keep a medium over the limit (when ``io``) and return the text that replaces it."""
    payload = media.data.encode("utf-8") if media.plain else base64_payload(media.data)
    text, _ = keep_media(policy, tool, media.what, payload, media_size(media), limit, io=io)
    return text


# -- batches -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One tool result of a batch, in the adapter's terms.

    ``content`` is a string, a list of blocks (text blocks, media blocks, others),
    or anything else (left alone).
    """

    tool: str
    content: Any
    call_id: str | None = None
    is_error: bool = False


def bound_contents(
    results: Sequence[Result], policy: Policy, *, io: bool, note_type: str = "text"
) -> list[Any]:
    """Finalize one batch and return each result's new content.

    Text (a string, or the text blocks of a list) goes through the seam as one
    batch. A media block whose base64 text is over ``config.media_threshold`` is
    replaced by a text block of type ``note_type`` naming where it was kept; that
    text then counts in the batch like any other. A content that nothing changed
    comes back as the same object. ``io=False`` is the send-boundary guard:
    nothing is stored, printed or logged.
    """
    limit = policy.config.media_threshold
    responses: list[ToolResponse] = []
    plans: list[tuple[list[Any], list[int], bool] | None] = []
    for result in results:
        content = result.content
        if isinstance(content, str):
            responses.append(ToolResponse(result.tool, content, result.call_id, result.is_error))
            plans.append(None)
            continue
        if not isinstance(content, (list, tuple)):
            responses.append(ToolResponse(result.tool, None, result.call_id, result.is_error))
            plans.append(None)
            continue
        blocks = list(content)
        replaced = False
        for index, block in enumerate(blocks):
            media = media_of(block)
            if media is not None and limit is not None and media_size(media) > limit:
                note = _media_note(policy, result.tool, media, limit, io)
                blocks[index] = {"type": note_type, "text": note}
                replaced = True
        positions = [index for index, block in enumerate(blocks) if text_of(block) is not None]
        texts: list[str] = [text_of(blocks[index]) or "" for index in positions]
        responses.append(ToolResponse(result.tool, texts or None, result.call_id, result.is_error))
        plans.append((blocks, positions, replaced))
    finals = policy.finalize(responses) if io else policy.guard(responses)
    return [
        _rebuild(result.content, plan, final)
        for result, plan, final in zip(results, plans, finals, strict=True)
    ]


def _rebuild(
    content: Any, plan: tuple[list[Any], list[int], bool] | None, final: FinalizedResponse
) -> Any:
    if plan is None:
        if isinstance(content, str) and final.capped_by is not None and final.parts:
            return final.parts[0]
        return content
    blocks, positions, replaced = plan
    changed = replaced
    if final.capped_by is not None and final.parts is not None:
        dropped: set[int] = set()
        for index, text in zip(positions, final.aligned(), strict=True):
            if text is None:  # merged into an earlier part by a collapse
                dropped.add(index)
            elif text != text_of(blocks[index]):
                blocks[index] = _with_text(blocks[index], text)
                changed = True
        if dropped:
            blocks = [block for index, block in enumerate(blocks) if index not in dropped]
            changed = True
    if not changed:
        return content
    return tuple(blocks) if isinstance(content, tuple) else blocks


# -- turns ---------------------------------------------------------------------------


def turn_batches(kinds: Iterable[str]) -> list[list[int]]:
    """Group result positions by the assistant turn they answer.

    ``kinds`` labels each item of a conversation: ``"turn"`` for an assistant turn
    (a model output), ``"result"`` for a tool result, anything else for the rest.
    A batch is the results after one turn and before the next; results before any
    turn form a batch of their own.
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for index, kind in enumerate(kinds):
        if kind == "turn":
            if current:
                batches.append(current)
            current = []
        elif kind == "result":
            current.append(index)
    if current:
        batches.append(current)
    return batches


def latest_batch(kinds: Sequence[str]) -> list[int]:
    """Positions of the results answering the latest assistant turn (maybe none)."""
    last_turn = max((i for i, kind in enumerate(kinds) if kind == "turn"), default=-1)
    return [i for i in range(last_turn + 1, len(kinds)) if kinds[i] == "result"]


@dataclass(frozen=True)
class Entry:
    """One item of a conversation as the batching sees it.

    ``kind`` is ``"turn"`` (an assistant turn), ``"result"`` (a tool result, with
    ``result`` set) or ``"other"``; ``where`` is the adapter's own locator.
    """

    kind: str
    result: Result | None = None
    where: Any = None


def changes(
    entries: Sequence[Entry],
    policy: Policy,
    *,
    io: bool,
    history: bool,
    note_type: str = "text",
) -> list[tuple[Any, Any]]:
    """Bound the latest batch (or, with ``history``, every batch): ``(where, new content)``.

    Only the results whose content changed are listed, in order.
    """
    kinds = [entry.kind for entry in entries]
    batches = turn_batches(kinds) if history else [latest_batch(kinds)]
    found: list[tuple[Any, Any]] = []
    for batch in batches:
        if not batch:
            continue
        results = [_result(entries[index]) for index in batch]
        contents = bound_contents(results, policy, io=io, note_type=note_type)
        for index, result, new in zip(batch, results, contents, strict=True):
            if new is not result.content:
                found.append((entries[index].where, new))
    return found


def _result(entry: Entry) -> Result:
    if entry.result is None:  # pragma: no cover - a "result" entry always carries one
        raise ValueError("a result entry needs its result")
    return entry.result
