"""One record of a session file read: its tool calls, turns and tool outputs, in order.

Beside the API shapes (:mod:`._repair` lists them), two agents' own session files:

* Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``): each
  line a record whose ``type`` is ``"user"`` or ``"assistant"`` and whose
  ``message`` is an Anthropic message; a user record answering a tool call holds
  ``tool_result`` blocks, and its ``toolUseResult`` field a second, structured copy
  of the same output (an object, a text or a list of blocks) that the model is not
  sent: its long strings are its :attr:`ToolOutput.copies`.
* Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): records
  ``{"type": "response_item", "payload": ITEM}`` whose item is an OpenAI Responses
  item (``function_call`` / ``function_call_output``, ``custom_tool_call`` /
  ``custom_tool_call_output``, matched by ``call_id``). Older rollouts hold the
  items themselves, one a line: they read as OpenAI Responses items.

A record is read by the adapters' own readers once unwrapped; the calls of one
record name the outputs of any other (the caller keeps the names). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..adapters._common import Entry, text_of
from ..adapters._shapes import (
    call_pairs,
    chat_entries,
    message_entries,
    responses_entries,
)
from ..core._jsonspans import JSONSpanError, Located, parse_value, skip_space
from ..core._utf8 import utf8_size
from ._records import PlacedError, Record

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "CLAUDE_CODE",
    "CODEX",
    "COPY_MIN_BYTES",
    "RESPONSES",
    "ParsedRecord",
    "PlacedError",
    "ToolOutput",
    "parse_record",
    "read_events",
]

CHAT = "OpenAI Chat Completions"
RESPONSES = "OpenAI Responses"
ANTHROPIC = "Anthropic Messages"
CLAUDE_CODE = "Claude Code"
CODEX = "Codex CLI"

#: Strings of a Claude Code ``toolUseResult`` shorter than this stay as they are: they
#: are metadata (a path, a count), not the output.
COPY_MIN_BYTES = 1024


@dataclass(frozen=True)
class ToolOutput:
    """One tool output found in a record.

    Attributes:
        where: ``"message N"``, ``"line N"`` or ``"line N, message M"``, from 1.
        tool: the tool's name, from the matching call (``"unknown"`` if none yet).
        call_id: the call identifier, when there is one.
        format: the format it is written in (the agent's, for an agent's file).
        parts: its text as string values located in the record: one for a string
            content, one per text part otherwise (other parts are left alone).
        whole: whether the content is a bare string rather than a list of parts.
        content: the content value itself (a located string or array).
        copies: the long strings of a second copy of the output kept beside it
            (Claude Code's ``toolUseResult``), to shrink with it.
    """

    where: str
    tool: str
    call_id: str | None
    format: str
    parts: tuple[Located, ...]
    whole: bool
    content: Any = None
    copies: tuple[Located, ...] = ()

    @property
    def size(self) -> int:
        """UTF-8 size of its text (all text parts together)."""
        return sum(utf8_size(part) for part in self.parts)


@dataclass(frozen=True)
class ParsedRecord:
    """A record's text, its tool calls (id → name), and its events in order: ``None``
    for a model turn, a :class:`ToolOutput` for an output."""

    record: Record
    text: str
    calls: dict[str, str]
    events: tuple[ToolOutput | None, ...]

    @property
    def outputs(self) -> list[ToolOutput]:
        return [event for event in self.events if event is not None]


def parse_record(record: Record, *, lines: bool) -> ParsedRecord:
    """Read one record. Raises :class:`PlacedError` with the byte offset in the file of
    what cannot be read (the caller, who has the file, names its line and column)."""
    try:
        text = record.data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PlacedError("invalid UTF-8", record.offset + error.start, column=False) from None
    try:
        value, end = parse_value(text, skip_space(text, 0))
        if skip_space(text, end) < len(text):
            raise JSONSpanError("unexpected text after the JSON value", skip_space(text, end))
    except JSONSpanError as error:
        message = str(error)
        if lines and error.index >= len(text):
            message = "a JSON Lines value must fit on one line"
        raise PlacedError(message, record.offset + utf8_size(text[: error.index])) from None
    if lines and not isinstance(value, Mapping):
        raise PlacedError("expected a JSON object on this line", record.offset)
    where = f"line {record.number}" if lines else f"message {record.number}"
    calls: dict[str, str] = {}
    events: list[ToolOutput | None] = []
    for label, items, agent, copy in _unwrap(value, where, lines=lines):
        calls.update(call_pairs(items))
        copies = tuple(_long_strings(copy)) if copy is not None else ()
        events.extend(read_events(items, label, agent, copies))
    return ParsedRecord(record, text, calls, tuple(events))


_Unwrapped = tuple[Callable[[int], str], Sequence[Any], str | None, Any]


def _unwrap(value: Any, where: str, *, lines: bool) -> Iterator[_Unwrapped]:
    if not isinstance(value, Mapping):
        return
    kind = value.get("type")
    message = value.get("message")
    if kind in ("user", "assistant") and isinstance(message, Mapping):
        yield (lambda _: where), [message], CLAUDE_CODE, value.get("toolUseResult")
        return
    payload = value.get("payload")
    if kind == "response_item" and isinstance(payload, Mapping):
        yield (lambda _: where), [payload], CODEX, None
        return
    nested = _items_of(value)
    if lines and nested is not None and "role" not in value and "type" not in value:
        yield (lambda i: f"{where}, message {i + 1}"), nested, None, None
        return
    yield (lambda _: where), [value], None, None


def _items_of(value: Mapping[str, Any]) -> list[Any] | None:
    for key in ("messages", "input"):
        if isinstance(value.get(key), list):
            return list(value[key])
    return None


# Each format's reading is the adapter's own: one rule for a live conversation and a saved one.
_READERS: tuple[tuple[str, Callable[[Sequence[Any]], list[Entry]]], ...] = (
    (CHAT, chat_entries),
    (RESPONSES, responses_entries),
    (ANTHROPIC, message_entries),
)


def read_events(items: Sequence[Any], label: Callable[[int], str], agent: str | None = None,
                copies: tuple[Located, ...] = ()) -> list[ToolOutput | None]:
    """The model turns (``None``) and tool outputs of ``items``, in order; each output
    named ``label(index)`` and, when ``agent`` is given, in that agent's format."""
    found: list[tuple[tuple[int, int, int], ToolOutput | None]] = []
    for name, read in _READERS:
        for entry in read(items):
            if entry.result is None:
                continue
            index, place = entry.where if isinstance(entry.where, tuple) else (entry.where, 0)
            parts = _parts(entry.result.content)
            if parts is None:
                continue
            result = entry.result
            found.append(((index, place, 1), ToolOutput(
                label(index), str(result.tool), _text(result.call_id), agent or name, *parts,
                content=result.content, copies=copies)))
    # A model turn of item i comes before the outputs of the same item.
    for index, item in enumerate(items):
        if _is_turn(item):
            found.append(((index, -1, 0), None))
    found.sort(key=lambda pair: pair[0])
    return [event for _, event in found]


def _is_turn(item: Any) -> bool:
    return any(entry.kind == "turn" for _, read in _READERS for entry in read([item]))


def _parts(content: Any) -> tuple[tuple[Located, ...], bool] | None:
    """The text of an output's content: (located strings, whether it is a bare string)."""
    if isinstance(content, Located):
        return (content,), True
    if not isinstance(content, list):
        return None
    return tuple(text for part in content if isinstance(text := text_of(part), Located)), False


def _long_strings(value: Any) -> Iterator[Located]:
    """The located strings of at least :data:`COPY_MIN_BYTES` in ``value``, in order."""
    if isinstance(value, Located):
        if len(value) * 4 >= COPY_MIN_BYTES and utf8_size(value) >= COPY_MIN_BYTES:
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _long_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _long_strings(item)


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str) else None
