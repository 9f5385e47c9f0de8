"""What every conversation adapter shares: reading SDK objects and dicts alike,
grouping tool results into batches, media and text blocks, and the one call to the
finalization seam per batch.

An adapter only knows its format's shape: which item is an assistant turn, which
is a tool result, where a result's content is and how to put a new one back. The
rest, and so the rules, are here, once.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._finalize import FinalizedResponse, Policy, ToolResponse
from .._notice import emit_notice, notice_line
from .._tokenizer import token_counter
from ..core._json import dumps, json_size
from ..core._media import Media, field, media_of, not_sent_note
from ..core._pressure import BYTES_PER_TOKEN, reported_tokens
from ..core._utf8 import utf8_size

__all__ = [
    "UNKNOWN_TOOL",
    "Entry",
    "Result",
    "bound_contents",
    "call_names",
    "changes",
    "context_used",
    "default_policy",
    "field",
    "keep_media",
    "latest_batch",
    "listed",
    "media_of",
    "plain_json",
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


def plain_json(value: Any) -> Any:
    """``value`` as JSON data: SDK models dumped, mappings and sequences walked."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(key): plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain_json(dump(mode="json"))
    return str(value)


def context_used(policy: Policy, messages: Sequence[Any], usage: Any,
                 latest: Sequence[Result]) -> int | None:
    """What the conversation takes before the latest batch, for context pressure: bytes,
    or tokens under ``measure = "tokens"``.

    ``None`` unless ``context_window`` is configured; the API's reported prompt
    size when given (tokens; 3 bytes each under bytes), else the measure of the
    messages' JSON less the latest batch's results.
    """
    if policy.config.context_window is None:
        return None
    in_tokens = policy.config.measure == "tokens"
    tokens = None if usage is None else reported_tokens(usage)
    if tokens is not None:
        return tokens if in_tokens else tokens * BYTES_PER_TOKEN
    try:
        if in_tokens:
            count = token_counter()
            whole = count(dumps(plain_json(list(messages))))
            return max(0, whole - sum(count(dumps(plain_json(r.content))) for r in latest))
        whole = json_size(plain_json(list(messages)))
        return max(0, whole - sum(json_size(plain_json(r.content)) for r in latest))
    except (TypeError, ValueError, RecursionError):  # a value JSON cannot hold: unknown
        return None


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


def keep_media(
    policy: Policy, tool: str, media: Media, limit: int, *, io: bool
) -> tuple[str, str | None]:
    """Keep a medium over the media limit; the text that replaces it, and its reference.

    Without ``io`` nothing is stored or printed (the send-boundary guard).
    """
    spill = io and policy.for_tool(tool).spill
    reference = policy.spill(media.payload(), tool=tool) if spill else None
    text = not_sent_note(media.what, media.size, limit, reference=reference, tried=spill)
    if io:
        emit_notice(notice_line(tool, utf8_size(text), media.size, "media_threshold"),
                    to_stderr=policy.notices)
    return text, reference


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
    results: Sequence[Result], policy: Policy, *, io: bool, note_type: str = "text",
    context: int | None = None,
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
            if media is not None and limit is not None and media.size > limit:
                note, _ = keep_media(policy, result.tool, media, limit, io=io)
                blocks[index] = {"type": note_type, "text": note}
                replaced = True
        positions = [index for index, block in enumerate(blocks) if text_of(block) is not None]
        texts: list[str] = [text_of(blocks[index]) or "" for index in positions]
        responses.append(ToolResponse(result.tool, texts or None, result.call_id, result.is_error))
        plans.append((blocks, positions, replaced))
    finals = policy.finalize(responses, context_used=context) if io else policy.guard(responses)
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
    messages: Sequence[Any] = (),
    usage: Any = None,
) -> list[tuple[Any, Any]]:
    """Bound the latest batch (or, with ``history``, every batch): ``(where, new content)``.

    Only the results whose content changed are listed, in order. The latest batch
    of ``messages`` is bounded under context pressure (``usage``: what the API
    reported, see :func:`context_used`).
    """
    kinds = [entry.kind for entry in entries]
    batches = turn_batches(kinds) if history else [latest_batch(kinds)]
    found: list[tuple[Any, Any]] = []
    for batch in batches:
        if not batch:
            continue
        results = [_result(entries[index]) for index in batch]
        used = None if history else context_used(policy, messages, usage, results)
        contents = bound_contents(results, policy, io=io, note_type=note_type, context=used)
        for index, result, new in zip(batch, results, contents, strict=True):
            if new is not result.content:
                found.append((entries[index].where, new))
    return found


def _result(entry: Entry) -> Result:
    if entry.result is None:  # pragma: no cover - a "result" entry always carries one
        raise ValueError("a result entry needs its result")
    return entry.result
