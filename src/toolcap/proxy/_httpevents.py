"""The event streams of an upstream reached over Streamable HTTP (``toolcap proxy --url``).

An answer may come as server-sent events: read as they arrive and passed on one by
one, the stream resumed after its last event (``Last-Event-ID``) when it is cut
short before its answers, and the session's GET stream kept open for what the
server starts. What these need of the session (its headers, a request, where a
message goes, how a request fails) is :class:`EventSession`.

An answer over ``max_line_size`` (a JSON body, :func:`read_json`, or one event) is
never held: it is fed as it arrives to the relay's long-line handler, the one a
stdio line that long goes to (``_longhttp``), which keeps it in the store and
answers its call with a note naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import Any, Protocol

from ..core._sizes import human_size
from ._httpclient import drain
from ._long import answered_ids
from ._longhttp import StreamedMessage
from ._sse import EventPart, SseReader

__all__ = [
    "EventSession", "deliver_json", "listen", "read_events", "read_json", "resume",
    "strike_answered",
]

# A reply stream cut short is resumed this many times before its requests fail.
_RESUME_ATTEMPTS = 2
# Milliseconds before resuming or reopening a stream, unless the server says otherwise.
_DEFAULT_RETRY_MS = 1000
# Seconds a stream may go on after its last answer before it is closed.
_DRAIN_SECONDS = 5.0

log = logging.getLogger("toolcap.proxy")


class EventSession(Protocol):
    """What reading a session's event streams asks of the session."""

    url: str

    @property
    def max_event(self) -> int | None:
        """The most bytes one event may hold (``max_line_size``), or None."""

    def stream_headers(self) -> dict[str, str]:
        """The headers of a GET for the session's event stream."""

    async def open(self, method: str, headers: dict[str, str], body: bytes = b"", *,
                   idle: bool = False) -> Any:
        """Send a request; its response, whose body is read as it is iterated."""

    def deliver(self, holder: list[bytes], initialize: bool,
                answered: list[Any] | None = None) -> Awaitable[None] | None:
        """Pass one message (the only item of ``holder``; ``answered``: the ids it
        answers, if known) on to the relay; what it returns, if anything, is awaited
        before reading on."""

    def fail(self, ids: list[Any], text: str) -> None:
        """Answer each request of ``ids`` with the error ``text``."""

    def long_message(self) -> StreamedMessage:
        """Start keeping a message over ``max_event`` (see ``_longhttp``)."""


def strike_answered(waiting: list[Any], message: bytes) -> list[Any] | None:
    """Remove from ``waiting`` the ids of the requests ``message`` answers; those ids
    (None: not looked for, nothing was waiting)."""
    if not waiting:
        return None
    found = answered_ids(message)
    for answered in found:
        if answered in waiting:
            waiting.remove(answered)
        elif answered is None and len(waiting) == 1:
            waiting.clear()  # an answer whose id is too deep to find
    return found


async def _kept(message: StreamedMessage, waiting: list[Any]) -> None:
    """Once ``message`` is kept (and its call answered), strike the ids it answered."""
    message.finish()
    for answered in await message.kept():
        if answered in waiting:
            waiting.remove(answered)


async def read_json(session: EventSession, response: Any, waiting: list[Any]) -> bytes | None:
    """The JSON body of ``response``; None when it was over ``max_event``, and kept and
    answered as such (the requests of ``waiting`` it did not answer fail)."""
    import httpx2

    limit = session.max_event
    body = bytearray()
    long: StreamedMessage | None = None
    # Closed here, not by the collector: left open, its closing is a task the loop may
    # end before (and Python says so on stderr).
    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
        try:
            async for chunk in chunks:
                if long is not None:
                    await long.put(chunk)
                elif limit is not None and len(body) + len(chunk) > limit:
                    long = session.long_message()
                    await long.put(body)  # handed on, not copied, and let go of here
                    body = bytearray()
                    await long.put(chunk)
                else:
                    body += chunk
        except BaseException as exc:
            if long is None:
                raise
            long.finish(cut_short=str(exc) or type(exc).__name__)
            if not isinstance(exc, httpx2.HTTPError):
                raise
            session.fail(waiting, f"{session.url} closed the connection in the middle of an "
                                  f"answer over max_line_size ({human_size(long.ends.size)} "
                                  "read); none of it was kept")
            return None
    if long is None:
        return bytes(body)
    await _kept(long, waiting)
    if waiting and long.cut_short is not None:
        session.fail(waiting, f"{session.url} answered with a message over max_line_size that "
                              f"stopped short ({long.cut_short}); none of it was kept")
    elif waiting:
        session.fail(waiting, f"{session.url} answered with a message over max_line_size "
                              f"({human_size(long.limit)}) whose request could not be told "
                              "(no id at its start or end); it is kept, see stderr")
    return None


async def deliver_json(
    session: EventSession, response: Any, waiting: list[Any], initialize: bool
) -> None:
    """Deliver the JSON body of ``response``, removing from ``waiting`` the ids it
    answers; those it does not answer fail."""
    body = await read_json(session, response, waiting)
    if body is None:
        return  # over max_line_size: kept and answered as such
    holder = [body]
    del body  # the relay holds the only reference, and may let go of it once read
    remaining = list(waiting)
    answered = strike_answered(remaining, holder[0])
    if len(remaining) == len(waiting):
        # Passed on, it would leave the client waiting for an answer forever.
        session.fail(waiting, f"{session.url} answered with JSON that answers no request "
                              "it was sent")
        return
    handled = session.deliver(holder, initialize, answered)
    waiting[:] = remaining  # delivered: a failure from here on is no answer
    if handled is not None:
        await handled
    if waiting:
        session.fail(waiting, f"{session.url} answered some of the requests it was sent, "
                              "not all")


async def read_events(
    session: EventSession, response: Any, waiting: list[Any], initialize: bool, *,
    until_answered: bool = True,
) -> SseReader:
    """Deliver the events of ``response`` (removing from ``waiting`` the ids they
    answer) until its end, or, ``until_answered``, until ``waiting`` is empty (a
    connection that breaks off before, on a stream with an event id to resume from,
    ends it as its end would)."""
    import httpx2

    reader = SseReader(session.max_event, stream_long=True)
    long: StreamedMessage | None = None  # an event over max_event, being kept
    try:
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                events = reader.feed(chunk)
                events.reverse()
                while events:
                    event = events.pop()
                    if isinstance(event, EventPart):
                        long = long or session.long_message()
                        await long.put(event.data)
                        if event.last:
                            message, long = long, None
                            await _kept(message, waiting)
                        continue
                    # The message passes on in a holder of its own, so that the relay
                    # holds its only reference and may let go of it once read.
                    holder = [event.data]
                    if not holder[0]:
                        continue  # a priming event: an id to resume from, no message
                    remaining = list(waiting)
                    # Before the relay takes the message; the ids found are passed on.
                    answered = strike_answered(remaining, holder[0])
                    handled = session.deliver(holder, initialize, answered)
                    waiting[:] = remaining  # delivered: a failure from here on is no answer
                    if handled is not None:
                        await handled  # read on once it is handled: one message at a time
                if until_answered and not waiting:
                    # The client's stream sends the answer first (it is waiting to run):
                    # reading on is no part of the call's time.
                    await asyncio.sleep(0)
                    # The server ends the stream after the answer: read to that end, so
                    # that the connection is kept for the next request, but not for long.
                    with contextlib.suppress(asyncio.TimeoutError):
                        await drain(chunks, _DRAIN_SECONDS, response)
                    break
    except (httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
        # Answered already (the connection broke while the stream's end was drained):
        # nothing is lost. Not yet, on a stream that can be resumed: the caller resumes
        # it after its last event, as one that ended early.
        if not until_answered or (waiting and reader.last_id is None):
            raise
        log.debug("the answer stream of %s broke off: %s", session.url, exc)
    finally:
        if long is not None:  # the stream ended inside it: nothing of it is kept
            long.finish(cut_short="the event stream ended inside the message")
    return reader


async def resume(
    session: EventSession, reader: SseReader, waiting: list[Any], initialize: bool
) -> None:
    """The stream ended before its answers: resume after its last event, or fail them."""
    import httpx2

    last_id = reader.last_id
    retry_ms = reader.retry_ms
    for _ in range(_RESUME_ATTEMPTS if last_id is not None else 0):
        await asyncio.sleep((retry_ms if retry_ms is not None else _DEFAULT_RETRY_MS) / 1000)
        headers = {**session.stream_headers(), "last-event-id": str(last_id)}
        try:
            response = await session.open("GET", headers)
            try:
                if response.status_code >= 300:
                    break
                again = await read_events(session, response, waiting, initialize)
            finally:
                await response.aclose()
        except httpx2.HTTPError:
            continue
        if not waiting:
            return
        last_id = again.last_id or last_id
        retry_ms = again.retry_ms if again.retry_ms is not None else retry_ms
    session.fail(waiting, f"{session.url} ended the answer's event stream before the answer")


async def listen(session: EventSession) -> None:
    """The session's GET stream: what the server starts (requests, notifications)."""
    last_id: str | None = None
    retry_ms: int | None = None
    failures = 0
    while failures < _RESUME_ATTEMPTS:
        headers = session.stream_headers()
        if last_id is not None:
            headers["last-event-id"] = last_id
        try:
            # An idle session may send nothing for hours: no read timeout here.
            response = await session.open("GET", headers, idle=True)
            try:
                kind = response.headers.get("content-type", "").lower()
                if response.status_code != 200 or not kind.startswith("text/event-stream"):
                    return  # the server offers no such stream (405), or not now
                reader = await read_events(session, response, [], False, until_answered=False)
            finally:
                await response.aclose()
            last_id = reader.last_id or last_id
            retry_ms = reader.retry_ms if reader.retry_ms is not None else retry_ms
            failures = 0
        except Exception as exc:  # an HTTP failure, or a stream that cannot be read
            log.debug("the GET stream of %s failed: %s", session.url, exc)
            failures += 1
        await asyncio.sleep((retry_ms if retry_ms is not None else _DEFAULT_RETRY_MS) / 1000)
