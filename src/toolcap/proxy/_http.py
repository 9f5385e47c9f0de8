"""An upstream MCP server reached over Streamable HTTP (``toolcap proxy --url``).

A lean client of the transport, on an event loop of its own thread (over
``_rawhttp``; ``httpx2`` through an HTTP proxy): each message is POSTed as it came,
and each answer (JSON or SSE events) reaches the relay as the bytes sent, read like
a stdio line, so memory follows the largest message; one over ``max_line_size`` goes
to the relay's long-line handler as it arrives, as over stdio (``_longhttp``).
Session id, revision, GET stream, ``Last-Event-ID`` resumption and DELETE as the
transport wants; a failed exchange is one stderr line and an error per request,
naming the URL."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast
from urllib.parse import urlsplit

from ._contracts import PROXY_ERROR, OnLine, OnLongLine, dumps, print_error
from ._handoff import Handoff
from ._http_errors import describe_transport_error, explain_refusal
from ._httpclient import new_client, send_request
from ._httpevents import deliver_json, listen, read_events, resume
from ._httpsend import Outgoing
from ._io import WriterClosed
from ._listings import ToolListings
from ._longhttp import StreamedMessage
from ._rawhttp import RawClient, Started
from ._relist import Relister
from ._revision import (
    SESSION_HEADER,
    StreamCancels,
    negotiated_revision,
    request_headers,
)
from ._room import Room

__all__ = ["DEFAULT_TIMEOUT", "HttpUpstream"]

# Seconds to connect, and to wait for the next bytes of an answer: a tool may
# run for minutes before its first byte, so reading waits longer by default.
DEFAULT_TIMEOUT = 30.0
DEFAULT_READ_TIMEOUT = 300.0

log = logging.getLogger("toolcap.proxy")


class HttpUpstream:
    """The relay's upstream: one MCP session with the server at ``url``."""

    #: ``send`` hands the line to the client's event loop and returns at once.
    sends_without_blocking = True
    #: How its end reads in a message.
    ended = "closed the connection"

    def __init__(self, url: str, headers: dict[str, str], timeout: float | None = None,
                 max_line: int | None = None) -> None:
        self.url = url
        self.headers = headers
        self._max_line = max_line  # the longest answer held (max_line_size)
        self._timeouts = (DEFAULT_TIMEOUT, DEFAULT_READ_TIMEOUT) if timeout is None else (
            timeout, timeout)
        self._last_report: str | None = None
        self._session_id: str | None = None
        self._version: str | None = None  # the revision initialize negotiated
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()
        # Lines to send, in order, and exchanges to make in order (already read).
        self._outbox: asyncio.Queue[bytes | Outgoing | None] = asyncio.Queue()
        self._writer_waits = False  # _write_all waits for the next line
        self._scheduled = 0  # lines sent and on their way to the outbox on the loop
        self._tasks: set[asyncio.Task[None]] = set()
        self._cancel_by_close = StreamCancels()
        self._closed = False
        self._writing: asyncio.Task[None] | None = None  # _write_all, while the loop runs
        self._grace = 2.0
        self._client: Any = None
        self._on_line: OnLine = lambda holder: None
        self._on_long_line: OnLongLine | None = None
        self._loop_thread: int | None = None  # the thread the event loop runs on
        self._shared: Handoff | None = None  # on a loop of the caller's (use_loop)
        self._room: Room | None = None
        self._ended = threading.Event()
        self._listings = ToolListings(url)  # routing headers, tools/list answers read
        self._relister = Relister(url, self._listings, self._spawn)  # calls refused for headers

    @property
    def returncode(self) -> int | None:  # there is no process
        return None

    def describe(self) -> str:
        return self.url

    def send_waited(self) -> float:  # a line is queued, never waits
        return 0.0

    # -- the relay's side (any thread) ----------------------------------------

    def run(
        self,
        on_line: OnLine,
        on_closed: Callable[[], None],
        on_long_line: OnLongLine | None = None,
    ) -> None:
        """Start the client's event loop; each message from the server goes to ``on_line``."""
        self._client = new_client(self.url, self.headers, *self._timeouts)
        self._on_line, self._on_long_line = on_line, on_long_line
        if self._shared is not None:
            self._shared.on_line = on_line
            self._start_on_shared_loop(on_closed)
            return
        loop = asyncio.new_event_loop()

        def serve() -> None:
            self._loop_thread = threading.get_ident()
            try:
                loop.run_until_complete(self._main())
            except Exception:
                log.exception("the HTTP upstream's event loop failed")
            finally:
                loop.close()
                if not self._closed:
                    on_closed()

        self._thread = threading.Thread(target=serve, name="toolcap-http-upstream", daemon=True)
        with self._starting:
            self._loop = loop
            self._thread.start()

    def send(self, line: bytes) -> None:
        """Send one message line. Raises WriterClosed if the session has been stopped."""
        if self._closed:
            raise WriterClosed
        on_loop = threading.get_ident() == self._loop_thread
        with self._starting:
            loop = self._loop
            if loop is None:  # before run(): it is sent once the loop runs
                self._outbox.put_nowait(line)
                return
            # From the loop itself, with no wake-up, unless a line another thread sent
            # before is still on its way to the outbox: this one goes after it.
            now = on_loop and self._scheduled == 0
            self._scheduled += not now
        if now:
            if self._writer_waits and self._outbox.empty():  # sent now: see _httpsend
                if (in_order := self._dispatch(line)) is not None:
                    self._outbox.put_nowait(in_order)
            else:
                self._outbox.put_nowait(line)
            return
        try:
            (loop.call_soon if on_loop else loop.call_soon_threadsafe)(self._put_sent, line)
        except RuntimeError as exc:  # the loop has ended
            raise WriterClosed from exc

    def _put_sent(self, line: bytes) -> None:
        with self._starting:
            self._scheduled -= 1
        self._outbox.put_nowait(line)

    def stop(self, grace: float = 2.0) -> None:
        """End the session (DELETE, within ``grace`` seconds) and the event loop."""
        if self._closed:
            return
        self._closed = True
        self._grace = grace
        if self._loop is None or (self._thread is None and self._shared is None):
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._outbox.put_nowait, None)
            # An exchange still waiting on a server that does not answer is given up
            # after the grace period: no thread or socket outlives a closed session.
            self._loop.call_soon_threadsafe(self._give_up_after, grace)
        if self._thread is not None:
            self._thread.join(2 * grace + 2.0)
        elif threading.get_ident() != self._loop_thread:
            self._ended.wait(2 * grace + 2.0)

    def use_loop(self, loop: asyncio.AbstractEventLoop, inline: Callable[[int], bool],
                 room: Room | None = None) -> None:
        """Run on ``loop``, the caller's, instead of a thread of its own: called on that
        loop's thread, before ``run``. A message ``inline(size)`` says the relay handles
        at once is handed to it on the loop, with no hop between threads; any other (a
        result to bound, to store) on a thread of its own, in order. While ``room`` is
        full, the server's messages wait before they are handed on (and so reading)."""
        self._loop, self._loop_thread = loop, threading.get_ident()
        self._shared = Handoff(inline)
        self._room = room

    def _start_on_shared_loop(self, on_closed: Callable[[], None]) -> None:
        assert self._loop is not None

        def start() -> None:
            task = asyncio.get_running_loop().create_task(self._main())
            task.add_done_callback(ended)

        def ended(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and task.exception() is not None:
                log.error("the HTTP upstream failed", exc_info=task.exception())
            self._ended.set()
            if not self._closed:
                on_closed()

        self._loop.call_soon_threadsafe(start)

    def _give_up_after(self, grace: float) -> None:
        writing = self._writing
        if writing is not None:
            asyncio.get_running_loop().call_later(grace, writing.cancel)

    # -- the event loop ---------------------------------------------------------

    async def _main(self) -> None:
        self._writing = asyncio.get_running_loop().create_task(self._write_all())
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._writing
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._session_id is not None:
                with contextlib.suppress(Exception):
                    response = await asyncio.wait_for(
                        self.open("DELETE", self._headers()), self._grace)
                    await response.aclose()
            await self._client.aclose()

    async def _write_all(self) -> None:
        """Send the client's messages in order; each request waits for its answer apart."""
        while True:
            self._writer_waits = True
            item = await self._outbox.get()
            self._writer_waits = False
            if item is None:
                return
            in_order = item if isinstance(item, Outgoing) else self._dispatch(item)
            if in_order is not None:
                await self._exchange(in_order.line, in_order.ids, in_order.routing,
                                     initialize=in_order.initialize)
                if in_order.listen:
                    self._spawn(listen(self))

    def _dispatch(self, line: bytes) -> Outgoing | None:
        """Send one message if it is a request (its answer read by a task of its own);
        else return it, to be sent once what went before it has been."""
        out = Outgoing(line, self._listings)
        if out.method == "notifications/cancelled" and self._cancel_by_close.cancel(out.params):
            return None  # done by closing the request's stream: nothing to send
        if out.in_order:
            if out.initialize:
                self._version = None
            return out
        started = None
        if isinstance(self._client, RawClient):
            with contextlib.suppress(Exception):  # raised again, and answered, by the task
                started = self._client.start("POST", self._headers(out.routing), line,
                                             self._timeouts[1])
        task = self._spawn(self._exchange(line, out.ids, out.routing, started=started))
        if started is not None:  # cancelled before it ran, it never reads its answer
            task.add_done_callback(lambda _task: started.abandon())
        if out.routing.get("mcp-method") == "tools/list":
            self._listings.settle_when_done(task, out.ids)
        if out.closable is not None:
            self._cancel_by_close.track(out.closable, task)
        return None

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def max_event(self) -> int | None:
        return self._max_line

    def long_message(self) -> StreamedMessage:
        """Start keeping an answer over max_line_size: the relay's long-line handler reads
        it on a thread of its own as it is fed (see ``_longhttp``)."""
        message = StreamedMessage(self._max_line or 0, self._timeouts[1])
        message.start(self._on_long_line)
        return message

    def stream_headers(self) -> dict[str, str]:
        return self._headers(stream_only=True)

    def _headers(
        self, routing: dict[str, str] | None = None, *, stream_only: bool = False
    ) -> dict[str, str]:
        return request_headers(self._session_id, self._version, routing, stream_only=stream_only)

    async def _exchange(
        self, line: bytes, ids: list[Any], routing: dict[str, str], *, initialize: bool = False,
        relist: bool = True, started: Started | None = None,
    ) -> None:
        """POST one message (``started``: already sent); deliver its answers, or an error
        for each request it carried (a call refused for its Mcp-Param-* headers: once
        more, after listing the tools)."""
        import httpx2

        waiting = list(ids)
        in_session = self._session_id is not None
        try:
            response = await (started.response() if started is not None else
                              self.open("POST", self._headers(routing), line))
        except httpx2.TransportError as exc:
            self.fail(waiting, self._why(exc))
            return
        try:
            status = response.status_code
            if status >= 300:
                answers, text = await explain_refusal(self.url, response, waiting, in_session)
                if answers and relist and (again := await self._relister.routing_after(
                        answers[0], line, routing, self.open, self._headers,
                        seconds=self._timeouts[1])):
                    await self._exchange(line, ids, again, relist=False)
                    return
                for answer in answers:  # the server's own error (invalid params, say)
                    waiting.remove(answer["id"])  # answered: a failure from here on is none
                    # Awaited: an answer to a big tools/list is learnt aside, and
                    # reaches the client only when that is done.
                    if (handed := self.deliver([dumps(answer)], False)) is not None:
                        await handed
                if waiting:  # those a refusal naming another request leaves unanswered
                    self.fail(waiting, text or "")
                else:  # all answered: only refused credentials are said (once) on stderr
                    self._report(text)
                return
            self._report(None)
            if initialize and (session := response.headers.get(SESSION_HEADER)):
                self._session_id = session
            if status == 202 or not waiting:
                if waiting:
                    self.fail(waiting, f"{self.url} accepted a request without answering it")
                return
            kind = response.headers.get("content-type", "").lower()
            if kind.startswith("application/json"):
                await deliver_json(self, response, waiting, initialize)
            elif kind.startswith("text/event-stream"):
                reader = await read_events(self, response, waiting, initialize)
                if waiting:
                    await resume(self, reader, waiting, initialize)
            else:
                self.fail(waiting, f"{self.url} answered with {kind or 'no content type'!r}, "
                                    "neither JSON nor an event stream")
        except httpx2.HTTPError as exc:
            self.fail(waiting, self._why(exc))
        except Exception as exc:  # whatever a server sends, each request gets an answer
            self.fail(waiting, f"{self.url} sent an answer that could not be read "
                                f"({type(exc).__name__})")
        finally:
            await response.aclose()

    async def open(
        self, method: str, headers: dict[str, str], body: bytes = b"", *, idle: bool = False
    ) -> Any:
        """Send a request; its response, whose body is read as it is iterated. ``idle``:
        the answer may be long in coming (the GET stream), with no read timeout."""
        return await send_request(self._client, self.url, method, headers, body,
                                  None if idle else self._timeouts[1])

    def _why(self, exc: Exception) -> str:
        """One line for an exchange that failed without an HTTP answer."""
        return describe_transport_error(self.url, urlsplit(self.url).hostname or "", exc,
                                        *self._timeouts)

    # -- delivering (also for _httpevents) ---------------------------------------

    def deliver(self, holder: list[bytes], initialize: bool,
                answered: list[Any] | None = None) -> Awaitable[None] | None:
        """As :meth:`~toolcap.proxy._httpevents.EventSession.deliver` says; of the
        answer to initialize, keep the revision chosen, for every later request."""
        if initialize:
            self._version = negotiated_revision(holder[0]) or self._version
        if self._listings.answers(holder[0], answered):  # what its tools mirror in headers
            if self._shared is not None and len(holder[0]) > Handoff.INLINE_MAX:
                return self._listings.learn_aside(holder, self._hand_on)
            self._listings.learn(holder)
        return self._hand_on(holder)

    def _hand_on(self, holder: list[bytes], *, wait_for_room: bool = True
                 ) -> Awaitable[None] | None:
        # The relay takes lines read into a bytearray too; it only pops this one.
        if self._shared is not None:
            if wait_for_room and self._room is not None and self._room.full():
                return self._room.then(lambda: self._hand_on(holder, wait_for_room=False))
            handled = self._shared.hand_on(cast("list[bytes | bytearray]", holder))
            return None if handled is None else asyncio.wrap_future(handled)
        self._on_line(cast("list[bytes | bytearray]", holder))
        return None

    def fail(self, ids: list[Any], text: str) -> None:
        """Say ``text`` on stderr (once while it lasts) and answer each request with it."""
        self._report(text)
        # Our error lists no tools: nothing to learn, but a tools/list it answers is
        # no longer in flight.
        self._listings.answers(b"", list(ids))
        for request_id in ids:
            error = {"code": PROXY_ERROR, "message": f"toolcap proxy: {text}"}
            # Not held back for room: nothing would wait for it.
            self._hand_on([dumps({"jsonrpc": "2.0", "id": request_id, "error": error})],
                          wait_for_room=False)
        ids.clear()

    def _report(self, text: str | None) -> None:
        """One stderr line per failure, not one per request while it lasts."""
        if text is not None and text != self._last_report:
            print_error(f"toolcap proxy: {text}")
        self._last_report = text

