"""Find the tool responses of a saved conversation, and splice bounded ones back in.

Three formats, told apart by their shapes (a file may even mix them):

* OpenAI Chat Completions: ``role: "tool"`` messages (``content`` a string or
  text parts), named by the assistant's ``tool_calls`` through ``tool_call_id``
  (and the legacy ``role: "function"`` messages, named by ``name``);
* OpenAI Responses API: ``function_call_output`` (and ``custom_tool_call_output``)
  items, named by the ``function_call`` with the same ``call_id``;
* Anthropic Messages: ``tool_result`` blocks in user turns (``content`` a string
  or blocks), named by the ``tool_use`` block with the same id.

A file is a JSON array of messages or items, an object holding them under
``messages`` or ``input``, or JSON Lines: one message or item per line, or one
such object (a whole conversation) per line. Everything here is pure: it reads
a text and returns spans; the command line does the I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._utf8 import utf8_size
from ._jsonspan import JSONSpanError, Located, parse_value, position, skip_space

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "RESPONSES",
    "Conversation",
    "RepairError",
    "ToolOutput",
    "read_conversation",
    "splice",
    "splice_pieces",
]

CHAT = "OpenAI Chat Completions"
RESPONSES = "OpenAI Responses"
ANTHROPIC = "Anthropic Messages"

_TEXT_PARTS = ("text", "input_text", "output_text")
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")
_CALL_ITEMS = ("function_call", "custom_tool_call")
_USE_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
UNKNOWN_TOOL = "unknown"


class RepairError(ValueError):
    """A conversation file that cannot be read; the message names where."""


@dataclass(frozen=True)
class ToolOutput:
    """One tool response found in the file.

    Attributes:
        where: ``"message N"`` (index in a JSON array, from 0) or ``"line N"`` (JSONL).
        tool: the tool's name, from the matching call (``"unknown"`` if none).
        call_id: the call identifier, when there is one.
        format: which of the three formats it is written in.
        parts: its text as string values located in the file: one for a string
            content, one per text part otherwise (other parts are left alone).
        whole: whether the content is a bare string rather than a list of parts.
    """

    where: str
    tool: str
    call_id: str | None
    format: str
    parts: tuple[Located, ...]
    whole: bool

    @property
    def size(self) -> int:
        """UTF-8 size of its text (all text parts together)."""
        return sum(utf8_size(part) for part in self.parts)


@dataclass(frozen=True)
class Conversation:
    """A parsed conversation file: its text and the tool responses in it, in order."""

    text: str
    lines: bool
    formats: tuple[str, ...]
    outputs: tuple[ToolOutput, ...]

    @property
    def ascii(self) -> bool:
        """Whether the file is pure ASCII (new values are then written with escapes)."""
        return self.text.isascii()


def read_conversation(
    data: bytes, *, lines: bool | None = None, progress: Callable[[int], None] | None = None
) -> Conversation:
    """Parse a conversation file (``lines``: JSON Lines; ``None``: tell from the content).

    ``progress`` gets the character index reached, now and then. Raises
    :class:`RepairError` with the line, column and byte offset of a syntax error.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise RepairError(f"line {line} (byte offset {error.start}): invalid UTF-8") from None
    del data  # the text holds the same: let a caller's temporary go before parsing
    start = 1 if text.startswith("\ufeff") else 0
    if lines is None:
        lines = _looks_like_lines(text, start)
    try:
        reader = _read_lines if lines else _read_json
        documents = reader(text, start, progress)
    except JSONSpanError as error:
        line, column, offset = position(text, error.index)
        raise RepairError(f"line {line}, column {column} (byte offset {offset}): {error}") from None
    outputs: list[ToolOutput] = []
    formats: list[str] = []
    for label, items in documents:
        for output in _find_outputs(items, label):
            outputs.append(output)
            if output.format not in formats:
                formats.append(output.format)
    return Conversation(text, lines, tuple(formats), tuple(outputs))


def splice(text: str, edits: Sequence[tuple[Located, str]], *, ensure_ascii: bool) -> str:
    """``text`` with each located string literal replaced by a new string value.

    Only the literals change; every other character stays where it was.
    """
    return "".join(splice_pieces(text, edits, ensure_ascii=ensure_ascii))


def splice_pieces(
    text: str, edits: Sequence[tuple[Located, str]], *, ensure_ascii: bool
) -> Iterator[str]:
    """:func:`splice` in pieces, in order, so that a large file need not be joined."""
    done = 0
    for old, new in sorted(edits, key=lambda edit: edit[0].start):
        if old.start < done:
            raise ValueError("overlapping edits")
        yield text[done : old.start]
        yield json.dumps(new, ensure_ascii=ensure_ascii)
        done = old.end
    yield text[done:]


# -- reading the file ---------------------------------------------------------------------

Documents = list[tuple[Callable[[int], str], list[Any]]]


def _looks_like_lines(text: str, start: int) -> bool:
    index = skip_space(text, start)
    if text.startswith("[", index):
        return False
    try:
        _, end = parse_value(text, index)
    except JSONSpanError:
        return False  # read it as one document: the error then names its place
    return skip_space(text, end) < len(text)


def _read_json(text: str, start: int, progress: Callable[[int], None] | None) -> Documents:
    index = skip_space(text, start)
    value, end = parse_value(text, index, on_item=progress)
    end = skip_space(text, end)
    if end < len(text):
        raise JSONSpanError("unexpected text after the JSON value", end)
    items = _items_of(value)
    if items is None:
        raise JSONSpanError(
            "not a conversation: expected an array of messages or items, or an object with "
            "'messages' or 'input'", index)
    return [(lambda i: f"message {i}", items)]


def _read_lines(text: str, start: int, progress: Callable[[int], None] | None) -> Documents:
    loose: list[Any] = []
    numbers: list[int] = []
    documents: Documents = []
    index, number = start, 0
    while index < len(text):
        number += 1
        newline = text.find("\n", index)
        stop = len(text) if newline < 0 else newline
        first = skip_space(text, index, stop)
        if first < stop:
            value, end = parse_value(text, first)
            if end > stop:
                raise JSONSpanError("a JSON Lines value must fit on one line", first)
            rest = skip_space(text, end, stop)
            if rest < stop:
                raise JSONSpanError("unexpected text after the JSON value on this line", rest)
            if not isinstance(value, Mapping):
                raise JSONSpanError("expected a JSON object on this line", first)
            nested = _items_of(value)
            if nested is not None and _is_container(value):
                documents.append((_prefix(f"line {number}, "), nested))
            else:
                loose.append(value)
                numbers.append(number)
        if progress is not None:
            progress(stop)
        index = stop + 1
    if loose:
        documents.insert(0, (lambda i: f"line {numbers[i]}", loose))
    return documents


def _prefix(text: str) -> Callable[[int], str]:
    return lambda i: f"{text}message {i}"


def _is_container(value: Mapping[str, Any]) -> bool:
    # A message or item has a role or a type; a conversation holds them.
    return "role" not in value and "type" not in value


def _items_of(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        for key in ("messages", "input"):
            if isinstance(value.get(key), list):
                return list(value[key])
    return None


# -- finding the responses -----------------------------------------------------------------


def _find_outputs(items: list[Any], label: Callable[[int], str]) -> Iterator[ToolOutput]:
    names = _call_names(items)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        where = label(index)
        role, kind = item.get("role"), item.get("type")
        if role == "tool":
            call_id = _text(item.get("tool_call_id"))
            tool = names.get(call_id or "") or _text(item.get("name")) or UNKNOWN_TOOL
            found = _parts(item.get("content"))
            if found:
                yield ToolOutput(where, tool, call_id, CHAT, *found)
        elif role == "function":
            found = _parts(item.get("content"))
            if found:
                yield ToolOutput(where, _text(item.get("name")) or UNKNOWN_TOOL, None, CHAT,
                                 *found)
        elif kind in _OUTPUT_ITEMS:
            call_id = _text(item.get("call_id"))
            found = _parts(item.get("output"))
            if found:
                yield ToolOutput(where, names.get(call_id or "", UNKNOWN_TOOL), call_id,
                                 RESPONSES, *found)
        elif isinstance(item.get("content"), list):
            for block in item["content"]:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    call_id = _text(block.get("tool_use_id"))
                    found = _parts(block.get("content"))
                    if found:
                        yield ToolOutput(where, names.get(call_id or "", UNKNOWN_TOOL), call_id,
                                         ANTHROPIC, *found)


def _call_names(items: list[Any]) -> dict[str, str]:
    """Call id → tool name, from every call in the conversation (in any order)."""
    names: dict[str, str] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        for call in item.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function") or call.get("custom") or {}
                name = function.get("name") if isinstance(function, Mapping) else None
                if isinstance(call.get("id"), str) and isinstance(name, str):
                    names[call["id"]] = name
        if (item.get("type") in _CALL_ITEMS and isinstance(item.get("call_id"), str)
                and isinstance(item.get("name"), str)):
            names[item["call_id"]] = item["name"]
        content = item.get("content")
        if isinstance(content, list):
            for block in content:
                if (isinstance(block, Mapping) and block.get("type") in _USE_BLOCKS
                        and isinstance(block.get("id"), str)
                        and isinstance(block.get("name"), str)):
                    names[block["id"]] = block["name"]
    return names


def _parts(content: Any) -> tuple[tuple[Located, ...], bool] | None:
    """The text of a response's content: (located strings, whether it is a bare string)."""
    if isinstance(content, Located):
        return (content,), True
    if not isinstance(content, list):
        return None
    parts: list[Located] = []
    for part in content:
        if isinstance(part, Located):
            parts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
            text = part.get("text")
            if isinstance(text, Located):
                parts.append(text)
    return (tuple(parts), False) if parts else None


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str) else None
