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
such object (a whole conversation) per line; beside them, the session files of
Claude Code and Codex CLI (:mod:`._session`). :func:`read_conversation` reads a
file held in memory; the command line reads files of any size record by record
(:mod:`._rewrite`).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core._errors import RepairError
from ._records import detect_lines
from ._rewrite import Reading, splice, splice_pieces
from ._session import ANTHROPIC, CHAT, RESPONSES, ToolOutput

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
    """Parse a whole conversation file held in memory (``lines``: JSON Lines; ``None``:
    tell from the content): the record-by-record reading of :mod:`._rewrite`, with each
    located value's span made an index into the whole text.

    ``progress`` gets the bytes read, now and then. Raises :class:`RepairError` with
    the line, column and byte offset of a syntax error.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise RepairError(f"line {line} (byte offset {error.start}): invalid UTF-8") from None
    stream = io.BytesIO(data)
    if lines is None:
        lines = detect_lines(stream)
    found: list[ToolOutput] = []
    names: dict[str, str] = {}
    chars = done = 0  # characters before byte ``done``
    for parsed in Reading(stream, lines=lines, progress=progress):
        record = parsed.record
        chars += len(data[done : record.offset].decode("utf-8"))
        names.update(parsed.calls)
        for output in parsed.outputs:
            if output.whole or output.parts:
                for value in {id(v): v for v in (*output.parts, *output.copies,
                                                 output.content)}.values():
                    if hasattr(value, "start"):
                        value.start += chars
                        value.end += chars
                found.append(output)
        chars += len(parsed.text)
        done = record.end
    outputs = tuple(replace(o, tool=names.get(o.call_id or "") or o.tool) for o in found)
    formats = tuple(dict.fromkeys(output.format for output in outputs))
    return Conversation(text, lines, formats, outputs)
