"""Server-sent events read from bytes as they arrive, in time and memory linear in them.

An upstream reached over HTTP answers on an SSE stream, and one event may carry a
result of many megabytes. :class:`SseReader` takes the body's chunks as they
come and returns each complete event's data as one ``bytes`` object, built once
from the pieces of its line, never decoded to text or held twice longer than the
moment it takes to join them. Lines end with CRLF, LF or a lone CR, as the
spec allows (a CRLF split between two chunks is one line end).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core._errors import EventTooLarge

__all__ = ["MAX_RETRY_MS", "MIN_RETRY_MS", "EventTooLarge", "SseEvent", "SseReader"]

#: The bounds put on a server's ``retry`` (milliseconds before reconnecting).
MIN_RETRY_MS = 100
MAX_RETRY_MS = 60_000


@dataclass
class SseEvent:
    """One dispatched event: its data (``data:`` lines joined by LF) and its id, if any."""

    data: bytes
    id: str | None


class SseReader:
    """Splits a byte stream into server-sent events (the WHATWG parsing rules, in bytes)."""

    def __init__(self, max_event: int | None = None) -> None:
        self._max_event = max_event  # bytes an event may hold before it ends
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

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events ``chunk`` completes, in order."""
        events: list[SseEvent] = []
        start = 0
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk.startswith(b"\n"):
                start = 1  # the LF of a CRLF the previous chunk ended inside
        # The next CR and LF, each searched for again only once passed: linear in the chunk.
        cr, lf = chunk.find(b"\r", start), chunk.find(b"\n", start)
        while True:
            if cr < 0 and lf < 0:
                self._line += memoryview(chunk)[start:]
                self._check(len(self._line))
                return events
            end = lf if cr < 0 or 0 <= lf < cr else cr
            self._check(len(self._line) + end - start)
            if self._line:
                self._line += memoryview(chunk)[start:end]
                line: bytes | bytearray = self._line
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

    def _check(self, line: int) -> None:
        if self._max_event is not None and self._held + line > self._max_event:
            raise EventTooLarge(f"an event over {self._max_event} bytes")

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
