"""The conversation shapes the adapters read, each read in one place.

Each reader labels every item of a conversation as an assistant turn, a tool
result (with its tool, content and call id) or something else, as
:class:`~toolcap.adapters._common.Entry` objects: the per-turn bound, the guard,
``toolcap.compact`` and ``toolcap repair`` all read conversations through them.
Plain dicts and the SDKs' own objects are read alike; no SDK is imported.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from ._common import UNKNOWN_TOOL, Entry, Result, call_names, field, listed, tool_name

__all__ = [
    "FORMATS",
    "call_pairs",
    "chat_entries",
    "detect_format",
    "entries_of",
    "is_error_message",
    "langchain_entries",
    "message_entries",
    "responses_entries",
]

#: The shapes, by the names ``toolcap.compact(format=...)`` takes.
FORMATS = ("chat", "responses", "anthropic", "langchain")


# -- OpenAI Chat Completions -------------------------------------------------------------


def _call_name(call: Any) -> Any:
    # Function tool calls carry ``function.name``; custom tool calls ``custom.name``.
    spec = field(call, "function") or field(call, "custom")
    return field(spec, "name")


def _chat_calls(messages: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    for message in messages:
        if field(message, "role") == "assistant":
            for call in listed(field(message, "tool_calls")):
                yield field(call, "id"), _call_name(call)


def chat_entries(messages: Sequence[Any]) -> list[Entry]:
    """Read Chat Completions ``messages``: assistant turns and tool results, in order.

    A result's tool is named by the assistant's ``tool_calls`` entry with its
    ``tool_call_id`` (wherever it stands), else by its own ``name`` (the legacy
    ``role: "function"`` reply), else ``"unknown"``. ``where`` is the message's
    index. Used by the adapter and by ``toolcap repair``.
    """
    names = call_names(_chat_calls(messages))
    entries = []
    for index, message in enumerate(messages):
        role = field(message, "role")
        if role == "assistant":
            entries.append(Entry("turn"))
        elif role in ("tool", "function"):  # "function": the legacy function-calling reply
            call_id = _str(field(message, "tool_call_id"))
            tool = tool_name(names, call_id, field(message, "name"))
            content = field(message, "content")
            entries.append(Entry("result", Result(tool, content, call_id), index))
        else:
            entries.append(Entry("other"))
    return entries


# -- OpenAI Responses API ----------------------------------------------------------------

_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _item_kind(item: Any) -> str:
    kind = field(item, "type")
    if kind in _OUTPUTS:
        return "result"
    if kind in _CALLS or kind == "reasoning":
        return "turn"
    if isinstance(kind, str) and kind.endswith("_call"):  # hosted tools: web_search_call, …
        return "turn"
    if field(item, "role") == "assistant":
        return "turn"
    return "other"


def _responses_calls(items: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    return ((field(item, "call_id"), field(item, "name"))
            for item in items if field(item, "type") in _CALLS)


def responses_entries(items: Sequence[Any]) -> list[Entry]:
    """Read Responses API ``input`` items: model turns and call outputs, in order.

    An output's tool is named by the ``function_call`` (or ``custom_tool_call``)
    with its ``call_id``, wherever it stands. ``where`` is the item's index. Used by
    the adapter and by ``toolcap repair``.
    """
    names = call_names(_responses_calls(items))
    entries = []
    for index, item in enumerate(items):
        kind = _item_kind(item)
        if kind != "result":
            entries.append(Entry(kind))
            continue
        call_id = _str(field(item, "call_id"))
        tool = tool_name(names, call_id, field(item, "name"))
        entries.append(Entry("result", Result(tool, field(item, "output"), call_id), index))
    return entries


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


# -- Anthropic Messages --------------------------------------------------------------------


def _message_calls(messages: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    return ((field(block, "id"), field(block, "name"))
            for message in messages if field(message, "role") == "assistant"
            for block in listed(field(message, "content")) if _is_call(block))


def message_entries(messages: Sequence[Any]) -> list[Entry]:
    """Read Messages API ``messages``: assistant turns and ``tool_result`` blocks, in order.

    A result's tool is named by the assistant's call block with its
    ``tool_use_id``, wherever it stands; a call block is any block whose type ends
    in ``tool_use`` (``tool_use``, ``server_tool_use``, ``mcp_tool_use`` today: each
    carries ``id`` and ``name``, and a kind added later keeps that shape). Only
    user turns hold tool results. ``where`` is ``(message index, block index)``.
    Used by the adapter and by ``toolcap repair``.
    """
    names = call_names(_message_calls(messages))
    entries: list[Entry] = []
    for index, message in enumerate(messages):
        role = field(message, "role")
        if role == "assistant":
            entries.append(Entry("turn"))
            continue
        content = field(message, "content")
        if role != "user" or not isinstance(content, (list, tuple)):
            entries.append(Entry("other"))
            continue
        for position, block in enumerate(content):
            if field(block, "type") != "tool_result":
                continue
            use_id = field(block, "tool_use_id")
            use_id = use_id if isinstance(use_id, str) else None
            result = Result(
                tool_name(names, use_id),
                field(block, "content"),
                use_id,
                bool(field(block, "is_error", False)),
            )
            entries.append(Entry("result", result, (index, position)))
    return entries


def _is_call(block: Any) -> bool:
    kind = field(block, "type")
    return isinstance(kind, str) and kind.endswith("tool_use")

# -- LangChain messages (read without importing langchain-core) -------------------------


def is_error_message(message: Any) -> bool:
    """Whether a LangChain ``ToolMessage`` reports an error."""
    return bool(field(message, "status") == "error")


def langchain_entries(messages: Sequence[Any]) -> list[Entry]:
    """Read LangChain messages: ``AIMessage`` turns and ``ToolMessage`` results, in order.

    A result's tool is named by the matching tool call, else by its own ``name``;
    ``where`` is the message's index. Used by the adapter and by ``toolcap.compact``
    (plain attribute reads: ``langchain-core`` is not imported).
    """
    names: dict[Any, Any] = {}
    entries: list[Entry] = []
    for index, message in enumerate(messages):
        kind = field(message, "type")
        if kind in ("ai", "AIMessageChunk"):
            for call in field(message, "tool_calls") or ():
                names[field(call, "id")] = field(call, "name")
            entries.append(Entry("turn"))
        elif kind in ("tool", "ToolMessageChunk"):
            call_id = field(message, "tool_call_id")
            name = names.get(call_id) or field(message, "name")
            tool = name if isinstance(name, str) and name else UNKNOWN_TOOL
            result = Result(
                tool,
                field(message, "content"),
                call_id if isinstance(call_id, str) else None,
                is_error_message(message),
            )
            entries.append(Entry("result", result, index))
        else:
            entries.append(Entry("other"))
    return entries


# -- which shape -----------------------------------------------------------------------------

_RESPONSES_TYPES = frozenset({
    "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "reasoning",
})
_LANGCHAIN_TYPES = frozenset({
    "ai", "human", "tool", "system", "AIMessageChunk", "ToolMessageChunk", "HumanMessageChunk",
})


def detect_format(messages: Sequence[Any]) -> str:
    """Which of :data:`FORMATS` a conversation is written in, from its items' shapes.

    A conversation with no tool call or result at all is read as ``"chat"`` (there
    is then nothing to compact anyway).
    """
    for message in messages:
        kind, role = field(message, "type"), field(message, "role")
        if kind in _RESPONSES_TYPES:
            return "responses"
        if role is None and kind in _LANGCHAIN_TYPES:
            return "langchain"
        if role in ("tool", "function") or (role == "assistant" and field(message, "tool_calls")):
            return "chat"
        content = field(message, "content")
        if role in ("user", "assistant") and isinstance(content, (list, tuple)) and any(
            field(block, "type") in ("tool_use", "tool_result") for block in content
        ):
            return "anthropic"
    return "chat"


def call_pairs(items: Sequence[Any]) -> dict[str, str]:
    """Call id → tool name for every tool call in ``items``, in any of the shapes but
    LangChain's (for a reader that sees a conversation a part at a time)."""
    return call_names(chain(_chat_calls(items), _responses_calls(items), _message_calls(items)))


def entries_of(messages: Sequence[Any], shape: str) -> list[Entry]:
    """Read ``messages`` as the named shape (one of :data:`FORMATS`)."""
    readers = {"chat": chat_entries, "responses": responses_entries,
               "anthropic": message_entries, "langchain": langchain_entries}
    return readers[shape](messages)
