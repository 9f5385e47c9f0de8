"""``toolcap proxy --listen``: the MCP Streamable HTTP transport, served to clients.

A plain ASGI application over the relay (:mod:`toolcap.proxy._asgi`), run by
uvicorn (which the ``mcp`` extra brings, with ``httptools`` to parse HTTP): POST
carries the client's messages and answers its requests on an SSE stream, GET
opens the session's stream for what the server starts, DELETE ends the session
and its upstream. Every session is a :class:`~toolcap.proxy._sessions.RelaySession`,
so results are bounded and ``read_artifact`` answered exactly as over stdio.
Every request passes :func:`toolcap.proxy._guard.refusal` (Origin and token) first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._asgi import Receive, Reply, Request, Scope, Send, send_events
from ._channel import (
    Channel,
    Event,
    Exchange,
    cancel_lines,
    id_key,
    primed,
    progress_tokens,
    restore_id,
)
from ._contracts import Hooks, Upstream, dumps, print_error
from ._guard import error_response as _error
from ._guard import refusal
from ._listen import ServeOptions, bind_socket
from ._sessions import RelaySession, SessionTable
from ._upstream import UpstreamStartError

__all__ = ["build_app", "serve_http"]

log = logging.getLogger("toolcap.proxy")

MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
# Revisions whose requests stand alone: no initialize, no session (2026-07-28 on).
STATELESS_REVISIONS = frozenset({"2026-07-28"})
LAST_EVENT_HEADER = "last-event-id"
_PARSE_ERROR = -32700


class _Server:
    """The HTTP side: sessions, their channels and the checks every request passes."""

    def __init__(
        self,
        options: ServeOptions,
        make_upstream: Callable[[], Upstream],
        make_hooks: Callable[[], Hooks],
    ) -> None:
        self.options = options
        self._make_upstream = make_upstream
        self._make_hooks = make_hooks
        self.table = SessionTable(options.max_sessions, options.idle_timeout)
        self._channels: dict[str, Channel] = {}
        self._shared_id: str | None = None  # the session of the stateless clients
        self._shared_lock = asyncio.Lock()
        self._next_id = 0
        # Upstream processes are spawned from one long-lived thread: on Linux
        # they are told to stop when the thread that spawned them ends.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolcap-spawn")

    # -- checks ---------------------------------------------------------------

    def _session_of(self, request: Request) -> tuple[RelaySession, Channel] | Reply:
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return _error(400, "toolcap proxy: the Mcp-Session-Id header is missing")
        session = self.table.get(session_id)
        channel = self._channels.get(session_id)
        if session is None or channel is None:
            return _error(404, "toolcap proxy: no such session (it ended); start a new one")
        return session, channel

    # -- handlers -------------------------------------------------------------

    async def handle(self, request: Request) -> Reply | _Stream:
        if request.path.rstrip("/") != MCP_PATH:
            return _error(404, f"toolcap proxy: nothing here; MCP is served at {MCP_PATH}")
        refused = refusal(request, self.options)
        if refused is not None:
            return refused
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            return await self._delete(request)
        return _error(
            405, "toolcap proxy: use POST, GET or DELETE", headers={"Allow": "POST, GET, DELETE"}
        )

    async def _post(self, request: Request) -> Reply | _Stream:
        if "application/json" not in request.headers.get("content-type", ""):
            return _error(415, "toolcap proxy: the body must be application/json")
        accept = request.headers.get("accept", "")
        if "text/event-stream" not in accept and "application/json" not in accept:
            return _error(406, "toolcap proxy: Accept must allow text/event-stream")
        body = await request.body(self.options.max_body)
        if body is None:
            return _error(413, f"toolcap proxy: the body is over {self.options.max_body} bytes")
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return _error(400, "toolcap proxy: the body is not valid JSON", _PARSE_ERROR)
        messages = parsed if isinstance(parsed, list) else [parsed]
        if not messages or not all(isinstance(m, dict) for m in messages):
            return _error(400, "toolcap proxy: the body is not a JSON-RPC message or batch")
        sessionless = request.headers.get(SESSION_HEADER) is None
        if sessionless and any(m.get("method") == "initialize" for m in messages):
            found: tuple[RelaySession, Channel] | Reply = await self._open_session()
        elif sessionless and request.headers.get(PROTOCOL_HEADER) in STATELESS_REVISIONS:
            return await self._stateless(messages)
        else:
            found = self._session_of(request)
        if isinstance(found, Reply):
            return found
        session, channel = found
        for message in messages:
            if message.get("method") == "notifications/cancelled":
                params = message.get("params")
                if isinstance(params, dict) and "requestId" in params:
                    channel.cancelled(params["requestId"])
        request_ids = [m["id"] for m in messages if "method" in m and "id" in m]
        line = body if b"\n" not in body and b"\r" not in body else dumps(parsed)
        session.last_active = time.monotonic()
        if not request_ids:
            if not session.send(line):
                return _error(404, "toolcap proxy: no such session (it ended); start a new one")
            return Reply(202, headers={SESSION_HEADER: session.id})
        exchange = channel.open_post(request_ids, progress_tokens(messages))
        session.open_streams += 1
        if not session.send(line):
            channel.end()
        prime = primed(request.headers.get(PROTOCOL_HEADER))
        return self._stream(session, channel, exchange, exchange.queue, prime=prime)

    def _get(self, request: Request) -> Reply | _Stream:
        if "text/event-stream" not in request.headers.get("accept", ""):
            return _error(406, "toolcap proxy: Accept must allow text/event-stream")
        found = self._session_of(request)
        if isinstance(found, Reply):
            return found
        session, channel = found
        last_event_id = request.headers.get(LAST_EVENT_HEADER)
        if last_event_id is not None:
            resumed = channel.resume(last_event_id)
            if resumed is None:
                return _error(
                    410,
                    f"toolcap proxy: cannot resume after event {last_event_id[:40]!r}: its "
                    f"stream is unknown or what followed is no longer kept",
                )
            exchange, queue = resumed
            session.open_streams += 1
            return self._stream(session, channel, exchange, queue)
        standalone = channel.open_standalone()
        if standalone is None:
            return _error(409, "toolcap proxy: this session already has a GET stream open")
        session.open_streams += 1
        return self._stream(session, channel, standalone, standalone.queue,
                            prime=primed(request.headers.get(PROTOCOL_HEADER)))

    async def _delete(self, request: Request) -> Reply:
        found = self._session_of(request)
        if isinstance(found, Reply):
            return found
        session, channel = found
        self._end(session, channel)
        return Reply(204)

    async def _stateless(self, messages: list[dict[str, Any]]) -> Reply | _Stream:
        """Requests of a stateless revision, relayed by one shared session.

        Their ids are replaced by ids of the proxy's own (clients choose theirs
        alone, so two may use the same) and restored on the way back.
        """
        requests = [m for m in messages if "method" in m and "id" in m]
        if not requests:
            return Reply(202)  # no session for a notification to act on
        found = await self._shared_session()
        if isinstance(found, Reply):
            return found
        session, channel = found
        originals: dict[str, Any] = {}
        rewritten = []
        for message in requests:
            self._next_id += 1
            own_id = f"toolcap-{self._next_id}"
            originals[id_key(own_id)] = message["id"]
            rewritten.append({**message, "id": own_id})
        exchange = channel.open_post([message["id"] for message in rewritten])
        session.open_streams += 1
        line = dumps(rewritten if len(rewritten) > 1 else rewritten[0])
        session.last_active = time.monotonic()
        if not session.send(line):
            channel.end()
        return self._stream(session, channel, exchange, exchange.queue, originals=originals)

    async def _shared_session(self) -> tuple[RelaySession, Channel] | Reply:
        async with self._shared_lock:
            if self._shared_id is not None:
                session = self.table.get(self._shared_id)
                channel = self._channels.get(self._shared_id)
                if session is not None and channel is not None:
                    return session, channel
            found = await self._open_session(shared=True)
            if not isinstance(found, Reply):
                self._shared_id = found[0].id
            return found

    def _stream(
        self,
        session: RelaySession,
        channel: Channel,
        exchange: Exchange,
        queue: asyncio.Queue[Event | None] | None,
        *,
        originals: dict[str, Any] | None = None,
        prime: bool = False,
    ) -> _Stream:
        """The SSE response of one connection reading ``exchange`` through ``queue``."""
        assert queue is not None

        def on_end() -> None:
            if originals is not None:
                # A stateless client cancels by closing its stream.
                for line in cancel_lines(exchange.waiting):
                    session.send(line)
            channel.close(exchange, queue)
            session.open_streams -= 1
            session.last_active = time.monotonic()

        # X-Accel-Buffering: a reverse proxy (nginx) sends each event on at once.
        headers = {"cache-control": "no-cache, no-transform", "x-accel-buffering": "no"}
        if originals is None:
            headers[SESSION_HEADER] = session.id
        return _Stream(
            queue, on_end, headers,
            prime=f"{exchange.number}-0" if prime and exchange.number is not None else None,
            rewrite=None if originals is None else lambda data: restore_id(data, originals),
            # A POST's stream ends with its answers: its head may wait for the first.
            wait_for_first=bool(exchange.waiting),
        )

    # -- sessions -------------------------------------------------------------

    async def _open_session(
        self, *, shared: bool = False
    ) -> tuple[RelaySession, Channel] | Reply:
        if not self.table.reserve():
            limit = self.options.max_sessions
            return _error(
                503,
                f"toolcap proxy: all {limit} sessions are in use; end one (DELETE) "
                "or start the proxy with a larger --max-sessions",
                headers={"Retry-After": "5"},
            )
        loop = asyncio.get_running_loop()
        try:
            upstream = await loop.run_in_executor(self._spawner, self._make_upstream)
        except UpstreamStartError as exc:
            self.table.release()
            print_error(str(exc))
            return _error(502, str(exc), -32000)
        except BaseException:
            self.table.release()
            raise
        channel = Channel(shared=shared)
        holder: list[RelaySession] = []
        hooks = self._make_hooks()
        use_loop = getattr(upstream, "use_loop", None)
        if use_loop is not None:  # a URL: its exchanges run on this loop, no thread between
            use_loop(loop, lambda size: hooks.fits(None, size))
        session = RelaySession(
            upstream,
            hooks,
            loop,
            channel.deliver,
            lambda: self._ended(holder[0], channel),
        )
        holder.append(session)
        self._channels[session.id] = channel
        self.table.add(session)
        session.start()
        return session, channel

    def _ended(self, session: RelaySession, channel: Channel) -> None:
        """The relay ended on its own (its upstream died): so does the session."""
        self._end(session, channel)

    def _end(self, session: RelaySession, channel: Channel) -> None:
        session.ended = True
        self.table.discard(session.id)
        self._channels.pop(session.id, None)
        session.close()
        channel.end()

    async def reap(self) -> None:
        """End sessions left idle, for as long as the server runs."""
        interval = max(0.05, min(self.options.idle_timeout / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            for session in self.table.expire_idle(time.monotonic()):
                channel = self._channels.pop(session.id, None)
                if channel is not None:
                    channel.end()
                log.info("session %s ended after being idle", session.id[:8])

    async def shutdown(self) -> None:
        """End every session and wait (with a deadline) for their upstreams to stop."""
        sessions = self.table.close_all()
        for channel in self._channels.values():
            channel.end()
        self._channels.clear()
        deadline = time.monotonic() + 10.0

        def wait_all() -> None:
            for session in sessions:
                session.wait(max(0.0, deadline - time.monotonic()))

        await asyncio.to_thread(wait_all)
        self._spawner.shutdown(wait=False)


class _Stream:
    """An SSE response, sent by :func:`~toolcap.proxy._asgi.send_events`."""

    def __init__(self, queue: asyncio.Queue[Event | None], on_end: Callable[[], None],
                 headers: dict[str, str], **options: Any) -> None:
        self.queue, self.on_end, self.headers, self.options = queue, on_end, headers, options

    async def send(self, send: Send, receive: Receive) -> None:
        await send_events(send, receive, self.headers, self.queue, self.on_end, **self.options)


AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def build_app(
    options: ServeOptions,
    make_upstream: Callable[[], Upstream],
    make_hooks: Callable[[], Hooks],
) -> AsgiApp:
    """The ASGI application serving MCP at ``/mcp``."""
    server = _Server(options, make_upstream, make_hooks)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            reply = await server.handle(request)
            if isinstance(reply, _Stream):
                await reply.send(send, receive)
            else:
                await reply.send(send)
        elif scope["type"] == "lifespan":
            await _lifespan(server, receive, send)

    return app


async def _lifespan(server: _Server, receive: Receive, send: Send) -> None:
    """Reap idle sessions while the server runs; end every session when it stops."""
    reaper: asyncio.Task[None] | None = None
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            reaper = asyncio.get_running_loop().create_task(server.reap())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if reaper is not None:
                reaper.cancel()
            await server.shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


def serve_http(
    options: ServeOptions,
    make_upstream: Callable[[], Upstream],
    make_hooks: Callable[[], Hooks],
) -> int:
    """Serve until SIGINT or SIGTERM; return the exit status."""
    import uvicorn

    try:
        sock = bind_socket(options.host, options.port)
    except OSError as exc:
        print_error(
            f"toolcap proxy: cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
        )
        return 1
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    app = build_app(options, make_upstream, make_hooks)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=3
    )
    print_error(f"toolcap proxy: serving MCP (Streamable HTTP) on http://{shown}:{port}{MCP_PATH}")
    uvicorn.Server(config).run(sockets=[sock])
    return 0
