"""Server-sent events read from bytes as they arrive, in time and memory linear in them.

An upstream reached over HTTP answers on an SSE stream, and one event may carry a
result of many megabytes. :class:`SseReader` takes the body's chunks as they
come and returns each complete event's data as one ``bytes`` object, built once
from the pieces of its line, never decoded to text or held twice longer than the
moment it takes to join them. Lines end with CRLF, LF or a lone CR, as the
spec allows (a CRLF split between two chunks is one line end).

An event whose data grows past ``max_event`` raises :class:`EventTooLarge`, or,
``stream_long``, is passed on in pieces as it is read (:class:`EventPart`, the
last one ``last``), so that it can be kept without being held: the pieces joined
are the data the event would have had. Its other fields are read within
:data:`FIELD_MAX` bytes (a longer one is ignored, as an unknown field is).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core._errors import EventTooLarge

__all__ = [
    "FIELD_MAX", "MAX_RETRY_MS", "MIN_RETRY_MS", "EventPart", "EventTooLarge", "SseEvent",
    "SseReader",
]

#: The bounds put on a server's ``retry`` (milliseconds before reconnecting).
MIN_RETRY_MS = 100
MAX_RETRY_MS = 60_000
#: The longest field other than data read in an event streamed in pieces.
FIELD_MAX = 4096
# A line of such an event with no colon within this many bytes names no known field.
_NAME_MAX = 16


@dataclass
class SseEvent:
    """One dispatched event: its data (``data:`` lines joined by LF) and its id, if any."""

    data: bytes
    id: str | None


@dataclass
class EventPart:
    """The next piece of the data of an event over ``max_event``; ``last``: it has ended."""

    data: bytes
    last: bool = False


class SseReader:
    """Splits a byte stream into server-sent events (the WHATWG parsing rules, in bytes)."""

    def __init__(self, max_event: int | None = None, *, stream_long: bool = False) -> None:
        self._max_event = max_event  # bytes an event may hold before it ends
        self._stream_long = stream_long
        self._long = False  # the event being read is passed on in pieces
        # What the line being read is, in such an event: "name" (its bytes held, until
        # a colon), "data" or "data-space" (passed on; at its start, a space to drop),
        # "field" (held, up to FIELD_MAX), "skip" (dropped).
        self._kind = "name"
        self._lines_out = 0  # data lines of that event passed on
        self._emitted = False
        self._line = bytearray()  # the line being read, across chunks
        self._after_cr = False  # the last chunk ended with a CR: an LF next is its CRLF
        self._data: list[bytes] = []  # the data lines of the event being read
        self._held = 0  # bytes of those data lines
        self._has_data = False
        self._event_id: str | None = None
        #: The last event id the stream set (sent back as Last-Event-ID to resume).
        self.last_id: str | None = None
        #: The reconnection delay the server asked for, in milliseconds.
        self.retry_ms: int | None = None

    @property
    def buffered(self) -> int:
        """Bytes held between chunks: the line being read and the event's data so far."""
        return len(self._line) + self._held

    def feed(self, chunk: bytes) -> list[SseEvent | EventPart]:
        """The events ``chunk`` completes (and the pieces of a long one), in order."""
        events: list[SseEvent | EventPart] = []
        start = 0
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk.startswith(b"\n"):
                start = 1  # the LF of a CRLF the previous chunk ended inside
        # The next CR and LF, each searched for again only once passed: linear in the chunk.
        cr, lf = chunk.find(b"\r", start), chunk.find(b"\n", start)
        while True:
            if cr < 0 and lf < 0:
                if self._long:
                    self._piece(chunk[start:], events)
                    return events
                self._line += memoryview(chunk)[start:]
                if self._over(len(self._line)):
                    self._go_long(events)
                return events
            end = lf if cr < 0 or 0 <= lf < cr else cr
            line: bytes | bytearray | None = None
            if self._long:
                self._piece(chunk[start:end], events)
            elif self._over(len(self._line) + end - start):
                self._line += memoryview(chunk)[start:end]
                self._go_long(events)
            elif self._line:
                self._line += memoryview(chunk)[start:end]
                line = self._line
                self._line = bytearray()
            else:
                line = chunk[start:end]
            start = end + 1
            if end == cr:
                if start == len(chunk):
                    self._after_cr = True  # its LF, if any, starts the next chunk
                elif chunk[start] == 0x0A:
                    start += 1
            if cr < start:
                cr = chunk.find(b"\r", start)
            if lf < start:
                lf = chunk.find(b"\n", start)
            if line is None:
                self._end_long_line(events)
                continue
            event = self._take_line(line)
            del line
            if event is not None:
                events.append(event)

    def _take_line(self, line: bytes | bytearray) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return None  # a comment (a keep-alive)
        value: bytes | bytearray
        colon = line.find(b":")
        if colon < 0:
            name, value = bytes(line), b""
        else:
            name = bytes(line[:colon])
            skip = colon + 2 if line[colon + 1 : colon + 2] == b" " else colon + 1
            if name == b"data" and isinstance(line, bytearray):
                del line[:skip]  # in place: a long line is not copied to drop its name
                value = line
            else:
                value = line[skip:]
        if name == b"data":
            self._data.append(bytes(value) if isinstance(value, bytearray) else value)
            self._held += len(value) + 1
            self._has_data = True
        elif name == b"id":
            if b"\0" not in value:
                self._event_id = bytes(value).decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit() and len(value) <= 9:
            # Within reason, whatever the server asks: no busy loop, no wait of days.
            self.retry_ms = min(max(int(value), MIN_RETRY_MS), MAX_RETRY_MS)
        return None

    def _over(self, line: int) -> bool:
        """Whether the event, with a line of ``line`` bytes, is over ``max_event`` (which
        raises EventTooLarge unless such an event is streamed)."""
        if self._max_event is None or self._held + line <= self._max_event:
            return False
        if not self._stream_long:
            raise EventTooLarge(f"an event over {self._max_event} bytes")
        return True

    # -- an event passed on in pieces ----------------------------------------------

    def _go_long(self, out: list[SseEvent | EventPart]) -> None:
        """Pass on what the event holds so far, and the rest of it as it comes."""
        self._long, self._kind = True, "name"
        self._lines_out, self._emitted = len(self._data), False
        self._emit(b"\n".join(self._data), out)
        self._data, self._held, self._has_data = [], 0, False
        line, self._line = self._line, bytearray()
        self._piece(bytes(line), out)

    def _emit(self, data: bytes, out: list[SseEvent | EventPart]) -> None:
        if data:
            out.append(EventPart(data))
            self._emitted = True

    def _data_line(self, out: list[SseEvent | EventPart]) -> None:
        if self._lines_out:
            self._emit(b"\n", out)  # data lines are joined by LF
        self._lines_out += 1
        self._kind = "data-space"

    def _piece(self, piece: bytes, out: list[SseEvent | EventPart]) -> None:
        """The next bytes of the current line of a streamed event (no line end in them)."""
        kind = self._kind
        if kind == "data":
            self._emit(piece, out)
        elif kind == "data-space":
            if piece:
                self._kind = "data"
                self._emit(piece[1:] if piece.startswith(b" ") else piece, out)
        elif kind != "skip":
            self._line += piece
            if kind == "name":
                colon = self._line.find(b":")
                if colon < 0:
                    if len(self._line) > _NAME_MAX:
                        self._kind, self._line = "skip", bytearray()
                    return
                if colon == 4 and self._line.startswith(b"data"):
                    rest = bytes(self._line[colon + 1 :])
                    self._line = bytearray()
                    self._data_line(out)
                    self._piece(rest, out)
                    return
                self._kind = "field"
            if len(self._line) > FIELD_MAX:
                self._kind, self._line = "skip", bytearray()

    def _end_long_line(self, out: list[SseEvent | EventPart]) -> None:
        """A line of a streamed event has ended (a blank one ends the event)."""
        kind, line = self._kind, self._line
        self._kind, self._line = "name", bytearray()
        if kind == "name" and not line:
            if self._emitted:
                out.append(EventPart(b"", last=True))
            elif self._event_id is not None:
                out.append(SseEvent(b"", self._event_id))
            if self._event_id is not None:
                self.last_id = self._event_id
            self._event_id = None
            self._long = False
        elif kind == "name" and line == b"data":
            self._data_line(out)  # a data line with no colon: an empty value
            self._kind = "name"  # and the next line starts
        elif kind in ("name", "field"):
            self._take_line(line)  # id, retry, event, a comment

    def _dispatch(self) -> SseEvent | None:
        if self._event_id is not None:
            self.last_id = self._event_id
        if not self._has_data:
            event = SseEvent(b"", self._event_id) if self._event_id is not None else None
            self._event_id = None
            return event
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        self._data = []
        self._held = 0
        self._has_data = False
        event = SseEvent(data, self._event_id)
        self._event_id = None
        return event
