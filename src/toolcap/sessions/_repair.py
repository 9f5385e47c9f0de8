"""Find the tool responses of a saved conversation, and splice bounded ones back in.

Three formats, told apart by their shapes (a file may even mix them), each read
by the adapters' own reader (:mod:`toolcap.adapters._shapes`), so that a saved
conversation is read as a live one is:

* OpenAI Chat Completions: ``role: "tool"`` messages (``content`` a string or
  text parts), named by the assistant's ``tool_calls`` through ``tool_call_id``
  (and the legacy ``role: "function"`` messages, named by ``name``);
* OpenAI Responses API: ``function_call_output`` (and ``custom_tool_call_output``)
  items, named by the ``function_call`` with the same ``call_id``;
* Anthropic Messages: ``tool_result`` blocks in user turns (``content`` a string
  or blocks) in user turns, named by the call block (``tool_use``, …) with the
  same id.

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

from ..core._errors import RepairError
from ._jsonspan import JSONSpanError, Located, parse_value, position, skip_space
from ._session import ANTHROPIC, CHAT, RESPONSES, ToolOutput, read_events

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
    return [(lambda i: f"message {i + 1}", items)]


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
    return lambda i: f"{text}message {i + 1}"


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
    return (event for event in read_events(items, label)
            if event is not None and (event.whole or event.parts))
