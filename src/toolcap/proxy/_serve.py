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
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._asgi import BodyBudget, EventStream, Receive, Reply, Request, Scope, Send
from ._channel import (
    Channel,
    Event,
    Exchange,
    cancel_lines,
    primed,
    progress_tokens,
    restore_id,
)
from ._contracts import Hooks, Upstream, dumps, print_error
from ._guard import error_response as _error
from ._guard import refusal, rpc_problem
from ._listen import ServeOptions, bind_socket
from ._pool import SessionPool
from ._sessions import RelaySession
from ._stateless import STATELESS_REVISIONS, SharedSession

__all__ = ["build_app", "serve_http"]

MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
LAST_EVENT_HEADER = "last-event-id"
_PARSE_ERROR = -32700
#: How many bodies of the largest size a POST may have (``max_body``) are read at once.
BODIES_AT_ONCE = 2


class _Server:
    """The HTTP side: the checks every request passes, and its handling by method."""

    def __init__(self, options: ServeOptions, pool: SessionPool) -> None:
        self.options = options
        self.pool = pool
        self._shared = SharedSession()  # the session of the stateless clients
        self._bodies = BodyBudget(BODIES_AT_ONCE * options.max_body)

    # -- checks ---------------------------------------------------------------

    def _session_of(self, request: Request) -> tuple[RelaySession, Channel] | Reply:
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return _error(400, "toolcap proxy: the Mcp-Session-Id header is missing")
        found = self.pool.lookup(session_id)
        if found is None:
            return _error(404, "toolcap proxy: no such session (it ended); start a new one")
        return found

    # -- handlers -------------------------------------------------------------

    async def handle(self, request: Request) -> Reply | EventStream:
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

    async def _post(self, request: Request) -> Reply | EventStream:
        if "application/json" not in request.headers.get("content-type", ""):
            return _error(415, "toolcap proxy: the body must be application/json")
        accept = request.headers.get("accept", "")
        if "text/event-stream" not in accept and "application/json" not in accept:
            return _error(406, "toolcap proxy: Accept must allow text/event-stream")
        sessionless = request.headers.get(SESSION_HEADER) is None
        if not sessionless and isinstance(unknown := self._session_of(request), Reply):
            return unknown  # said before the body is read: it may be large
        read = await self._read_messages(request)
        if isinstance(read, Reply):
            return read
        body, parsed, messages = read
        if sessionless and any(m.get("method") == "initialize" for m in messages):
            found: tuple[RelaySession, Channel] | Reply = await self.pool.open()
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

    async def _read_messages(
        self, request: Request
    ) -> tuple[bytes, Any, list[dict[str, Any]]] | Reply:
        """A POST's body, its JSON and its JSON-RPC messages; or the reply refusing it.
        What bodies being read at once hold together is bounded (:class:`BodyBudget`)."""
        limit = self.options.max_body
        body = await request.body(limit, self._bodies)
        if body == 413:
            return _error(413, f"toolcap proxy: the body is over {limit} bytes")
        if body == 503:
            return _error(503, "toolcap proxy: too many large requests are being read at "
                               "once; retry in a moment", headers={"Retry-After": "1"})
        assert isinstance(body, bytes)
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return _error(400, "toolcap proxy: the body is not valid JSON", _PARSE_ERROR)
        messages = parsed if isinstance(parsed, list) else [parsed]
        if not messages or not all(isinstance(m, dict) for m in messages):
            return _error(400, "toolcap proxy: the body is not a JSON-RPC message or batch")
        if (problem := rpc_problem(messages)) is not None:
            return _error(400, f"toolcap proxy: {problem}")
        return body, parsed, messages

    def _get(self, request: Request) -> Reply | EventStream:
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
        self.pool.end(session, channel)
        return Reply(204)

    async def _stateless(self, messages: list[dict[str, Any]]) -> Reply | EventStream:
        """Requests of a stateless revision, relayed by one shared session.

        Their ids are replaced by ids of the proxy's own (clients choose theirs
        alone, so two may use the same) and restored on the way back.
        """
        requests = [m for m in messages if "method" in m and "id" in m]
        if not requests:
            return Reply(202)  # no session for a notification to act on
        found = await self._shared.get(self.pool.lookup, lambda: self.pool.open(shared=True))
        if isinstance(found, Reply):
            return found
        session, channel = found
        rewritten, originals = self._shared.own_ids(requests)
        exchange = channel.open_post([message["id"] for message in rewritten])
        session.open_streams += 1
        line = dumps(rewritten if len(rewritten) > 1 else rewritten[0])
        session.last_active = time.monotonic()
        if not session.send(line):
            channel.end()
        return self._stream(session, channel, exchange, exchange.queue, originals=originals)

    def _stream(
        self,
        session: RelaySession,
        channel: Channel,
        exchange: Exchange,
        queue: asyncio.Queue[Event | None] | None,
        *,
        originals: dict[str, Any] | None = None,
        prime: bool = False,
    ) -> EventStream:
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
        return EventStream(
            queue, on_end, headers,
            prime=f"{exchange.number}-0" if prime and exchange.number is not None else None,
            rewrite=None if originals is None else lambda data: restore_id(data, originals),
            # A POST's stream ends with its answers: its head may wait for the first.
            wait_for_first=bool(exchange.waiting),
        )

AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def build_app(
    options: ServeOptions,
    make_upstream: Callable[[], Upstream],
    make_hooks: Callable[[], Hooks],
) -> AsgiApp:
    """The ASGI application serving MCP at ``/mcp``."""
    server = _Server(options, SessionPool(options, make_upstream, make_hooks))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            reply = await server.handle(request)
            if isinstance(reply, EventStream):
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
            reaper = asyncio.get_running_loop().create_task(server.pool.reap())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if reaper is not None:
                reaper.cancel()
            await server.pool.shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


def serve_http(
    options: ServeOptions,
    make_upstream: Callable[[], Upstream],
    make_hooks: Callable[[], Hooks],
) -> int:
    """Serve until SIGINT or SIGTERM; return the exit status."""
    import uvicorn

    from ._connections import ACCEPT_BATCH, GuardedProtocol, connection_cap

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
    # No X-Forwarded-* rewriting (nothing here reads the client's address or scheme)
    # and no Server header: less work and fewer bytes per request.
    # Deadlines on a request's head and body, and a cap on open connections (uvicorn
    # has neither: idle connections could take every file descriptor).
    GuardedProtocol.open_connections.cap = connection_cap(options.max_sessions)
    config = uvicorn.Config(
        app, http=GuardedProtocol, ws="none", backlog=ACCEPT_BATCH, log_level="warning",
        access_log=False, lifespan="on", timeout_graceful_shutdown=3, proxy_headers=False,
        server_header=False,
    )
    print_error(f"toolcap proxy: serving MCP (Streamable HTTP) on http://{shown}:{port}{MCP_PATH}")
    uvicorn.Server(config).run(sockets=[sock])
    return 0
