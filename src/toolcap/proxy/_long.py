"""Messages the relay does not read whole: ids found at a message's ends, long lines kept.

A message over ``max_line_size`` is streamed to the artifact store as it is read
(:func:`keep_long_line`); only its first and last few kilobytes stay in memory,
to find the id of the request it answers (:func:`response_ids`). The same windows
serve to answer a call whose response was not valid JSON. The message comes from
a stdio line (``_io.LongLine``) or an HTTP answer (``_longhttp.StreamedMessage``):
anything with a ``limit`` and ``chunks()`` (:class:`LongMessage`); one whose
source ends before it does raises :class:`MessageCutShort` and is never kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..core._errors import MessageCutShort
from ..core._sizes import human_size

__all__ = [
    "WINDOW", "Ends", "KeptLine", "LongMessage", "MessageCutShort", "answered_ids",
    "ids_anywhere", "keep_long_line", "response_ids",
]

#: Bytes kept of each end of a message for finding its id.
WINDOW = 4096
# A message this small is parsed to learn which requests it answers; a larger
# one (a big result) is read by its first and last bytes only.
_PARSE_UP_TO = 1 << 16

_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")'
_ANY_ID = re.compile(_ID)
# Where the id of a message stands when it is the last key (before "jsonrpc", if
# that comes last); the first key is read by _RESPONSE_HEAD. An "id" elsewhere in a
# message may belong to its content.
_LAST_ID = re.compile(rb",\s*" + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z')
_JSONRPC = rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
# The start of a response: "result" or "error" among its first keys, after its id if first.
_RESPONSE_HEAD = re.compile(
    rb"\s*\{\s*" + _JSONRPC + rb"(?:" + _ID + rb"\s*,\s*)?" + _JSONRPC + rb'"(?:result|error)"\s*:'
)


def _decoded(matches: Iterator[re.Match[bytes] | None]) -> Iterator[Any]:
    for match in matches:
        if match is not None:
            try:
                yield json.loads(match.group(1))
            except ValueError:
                continue


def response_ids(head: bytes, tail: bytes) -> list[Any]:
    """The id of the request a message answers, from its first and last bytes: ``[]``
    when it is no answer (a request, a notification), ``[None]`` when it is one whose
    id is in neither place."""
    match = _RESPONSE_HEAD.match(head)
    if match is None:
        return []
    found = list(_decoded(iter((match if match.group(1) else _LAST_ID.search(tail),))))
    return found or [None]


def answered_ids(data: bytes) -> list[Any]:
    """The ids of the requests the message (or batch) ``data`` answers, as
    :func:`response_ids` says them."""
    if len(data) > _PARSE_UP_TO:
        return response_ids(data[:WINDOW], data[-WINDOW:])
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        return []
    items = message if isinstance(message, list) else [message]
    # An error whose id is null (the server could not read the request) answers none.
    return [m.get("id") for m in items if isinstance(m, dict) and "method" not in m
            and ("result" in m or "error" in m) and m.get("id") is not None]


def ids_anywhere(windows: tuple[bytes, bytes]) -> Iterator[Any]:
    """Every ``"id": …`` in the windows, first to last (for a message that is not JSON)."""
    for window in windows:
        yield from _decoded(iter(_ANY_ID.finditer(window)))


class LongMessage(Protocol):
    """A message over ``max_line_size``, read as it arrives, never whole."""

    limit: int

    def chunks(self) -> Iterator[bytes | bytearray]:
        """Its bytes in order; raises MessageCutShort if its source ended before it did."""


@dataclass
class Ends:
    """The first and last :data:`WINDOW` bytes of a message read in chunks, and its size."""

    head: bytes = b""
    tail: bytes = b""
    size: int = 0

    def add(self, chunk: bytes | bytearray) -> None:
        self.size += len(chunk)
        if len(self.head) < WINDOW:
            self.head += chunk[: WINDOW - len(self.head)]
        self.tail = (self.tail + chunk[-WINDOW:])[-WINDOW:]


@dataclass
class KeptLine:
    """What became of a long line: its size, its ends, and its reference if it was kept."""

    size: int
    limit: int
    head: bytes
    tail: bytes
    ref: str | None
    reason: str
    whole: bool = True  # False: its source ended first, and nothing of it was kept

    def what(self) -> str:
        return f"{human_size(self.size)}, over max_line_size ({human_size(self.limit)})"

    def kept(self) -> str:
        if self.ref:
            return f"the whole message is kept as {self.ref}"
        return f"it could not be kept ({self.reason})"

    def note(self, read_artifact_name: str | None) -> str:
        """What the call it answered gets instead of its result."""
        how = ""
        if self.ref and read_artifact_name:
            how = f"; read parts of it with {read_artifact_name}"
        return (f"[toolcap: this response was {self.what()}, so it was not read; "
                f"{self.kept()} (the JSON-RPC message as the server sent it){how}]")


def keep_long_line(long_line: LongMessage, open_writer: Callable[[], Any]) -> KeptLine:
    """Read ``long_line`` to its end into a store writer from ``open_writer()``; one
    cut short is dropped from the store (a reference never names part of a message)."""
    ends = Ends()
    writer: Any = None
    reason = ""
    try:
        writer = open_writer()
    except Exception as exc:  # no store, or it failed: the line is still read to its end
        reason = str(exc) or type(exc).__name__
    try:
        for chunk in long_line.chunks():
            ends.add(chunk)
            if writer is not None:
                try:
                    writer.write(chunk)
                except Exception as exc:
                    reason, writer = str(exc) or type(exc).__name__, None
    except MessageCutShort as exc:
        if writer is not None:
            writer.abort()
        return KeptLine(ends.size, long_line.limit, ends.head, ends.tail, None, str(exc),
                        whole=False)
    ref = None
    if writer is not None:
        try:
            ref = writer.commit()
        except Exception as exc:
            reason = str(exc) or type(exc).__name__
    return KeptLine(ends.size, long_line.limit, ends.head, ends.tail, ref, reason)
