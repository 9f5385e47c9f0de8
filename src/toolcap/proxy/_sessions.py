"""One relay per HTTP session, and the table of live sessions.

A session served over Streamable HTTP runs the same :class:`Relay` as
``toolcap proxy`` over stdio, so it bounds, answers ``read_artifact`` and fails
exactly as the stdio proxy does. The relay's client side is a queue the HTTP
layer puts the client's messages in, and a writer that hands each line the
relay writes to the event loop. Each session has an upstream of its own (a
process for a command, a session of its own for a URL), so nothing one client
does is seen by another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable

from ._contracts import Hooks, Upstream
from ._io import WriterClosed
from ._relay import Relay
from ._room import Room

__all__ = ["RelaySession", "SessionTable"]

log = logging.getLogger("toolcap.proxy")


class _QueueReader:
    """The client's messages, as the relay reads them; None in the queue ends them."""

    def __init__(self) -> None:
        self.lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._unhandled = 0  # lines put and not yet handled by the relay
        self._took = False  # the relay took a line, and handles it until it reads again

    def put(self, line: bytes) -> None:
        with self._lock:
            self._unhandled += 1
        self.lines.put(line)

    def idle(self) -> bool:
        """Whether every line put has been handled (the relay waits for the next)."""
        return self._unhandled == 0

    def readline(self) -> bytes | None:
        if self._took:
            self._took = False
            with self._lock:
                self._unhandled -= 1
        line = self.lines.get()
        self._took = line is not None
        return line


class _LoopWriter:
    """Hands each line the relay writes to ``on_line`` on the event loop (made on the
    loop's thread). A line written on the loop's thread is handed on there and then,
    unless a line from another thread is still on its way (it goes after that one):
    the client's stream has it without a turn of the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_line: Callable[[bytes], None],
                 room: Room | None = None) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._on_line = on_line
        # Lines written on another thread wait while the client has too much to read.
        self._room = room
        self._lock = threading.Lock()
        self._queued = 0  # lines scheduled on the loop and not yet handed on
        self.closed = False
        self.left = False  # the session was ended: its client has gone

    def gone(self) -> bool:
        return self.closed or self.left

    def write_line(self, data: bytes) -> None:
        room = self._room
        on_loop = threading.get_ident() == self._loop_thread
        if room is not None and not on_loop:
            room.wait(self.gone)
        with self._lock:
            if self.closed:
                raise WriterClosed
            if not (on_loop and self._queued == 0):
                try:
                    if on_loop:
                        self._loop.call_soon(self._hand_on_queued, data)
                    else:
                        self._loop.call_soon_threadsafe(self._hand_on_queued, data)
                except RuntimeError as exc:  # the loop is closed: the server has stopped
                    self.closed = True
                    raise WriterClosed from exc
                self._queued += 1
                if room is not None:
                    room.moving(len(data))
                return
        self._on_line(data)

    def _hand_on_queued(self, data: bytes) -> None:
        with self._lock:
            self._queued -= 1
        try:
            self._on_line(data)
        finally:
            if self._room is not None:
                self._room.moving(-len(data))

    def close(self) -> None:
        with self._lock:
            self.closed = True


class RelaySession:
    """A relay whose client is an HTTP session.

    ``on_line`` receives each message line the relay writes for the client and
    ``on_end`` is called once the relay has ended; both run on ``loop``.
    """

    def __init__(
        self,
        upstream: Upstream,
        hooks: Hooks,
        loop: asyncio.AbstractEventLoop,
        on_line: Callable[[bytes], None],
        on_end: Callable[[], None],
        room: Room | None = None,
        *,
        threads_wait: bool = True,
    ) -> None:
        self.id = secrets.token_urlsafe(24)  # visible ASCII, as the spec requires
        self.upstream = upstream
        self.last_active = time.monotonic()
        self.open_streams = 0
        self.ended = False
        self._loop = loop
        self._on_end = on_end
        self._reader = _QueueReader()
        self.room = room
        # ``threads_wait``: a line the relay writes on a thread waits while ``room`` is
        # full. Not for an upstream on the loop, which waits there instead (see
        # HttpUpstream.use_loop): its lines are written on threads every session shares.
        self._writer = _LoopWriter(loop, on_line, room if threads_wait else None)
        self._closed = False
        self.hooks = hooks
        self._relay = Relay(upstream, hooks, client=(self._reader, self._writer))
        self._relay_done = threading.Event()

    def start(self) -> None:
        """Start the relay on a thread of its own."""
        threading.Thread(target=self._run_relay, name="toolcap-session", daemon=True).start()

    def send(self, line: bytes) -> bool:
        """Hand one client message to the relay; False if the session has ended."""
        if self._closed or self._relay_done.is_set():
            return False
        if getattr(self.upstream, "sends_without_blocking", False):
            # Nothing on the way to such an upstream waits: the relay takes the
            # message here, without the hop to its reading thread.
            self._relay.from_client(line)
            return True
        ready_to_send = getattr(self.upstream, "ready_to_send", None)
        # Not a batch: the relay may write one longer than the line it came in.
        if ready_to_send is not None and self._reader.idle() and not (
                line.lstrip().startswith(b"[")):
            # Nothing before it waits, and the upstream can take it without blocking
            # this loop: the relay takes it here too, and it is on its way at once.
            with ready_to_send(len(line)) as ready:
                if ready:
                    self._relay.from_client(line)
                    return True
        self._reader.put(line)
        return True

    def close(self) -> None:
        """End the session as a client going away does: the relay stops its upstream."""
        if not self._closed:
            self._closed = True
            self._writer.left = True
            if self.room is not None:
                self.room.close()
            self._reader.lines.put(None)

    def wait(self, timeout: float) -> bool:
        """Wait until the relay has ended and stopped its upstream; False on timeout."""
        return self._relay_done.wait(timeout)

    def _run_relay(self) -> None:
        try:
            self._relay.run()
            if self._relay.exit_message:
                log.warning("session %s: %s", self.id[:8], self._relay.exit_message)
        except Exception:
            log.exception("session relay failed")
            self.upstream.stop()
        finally:
            self._relay_done.set()
            self.close()  # the relay's client loop ends, if the upstream ended first
            # What the relay wrote is on the loop already; the end comes after it.
            self._writer.close()
            with contextlib.suppress(RuntimeError):  # a closed loop: the server has stopped
                self._loop.call_soon_threadsafe(self._on_end)


class SessionTable:
    """The live sessions: at most ``limit``, each ended after ``idle_timeout`` seconds unused."""

    def __init__(self, limit: int, idle_timeout: float) -> None:
        self.limit = limit
        self.idle_timeout = idle_timeout
        self._sessions: dict[str, RelaySession] = {}
        self._starting = 0  # slots reserved by sessions whose upstream is starting

    def __len__(self) -> int:
        return len(self._sessions)

    def reserve(self) -> bool:
        """Take a slot for a session about to start; False if every slot is taken."""
        if len(self._sessions) + self._starting >= self.limit:
            return False
        self._starting += 1
        return True

    def release(self) -> None:
        """Give back a reserved slot (the session could not start)."""
        self._starting -= 1

    def add(self, session: RelaySession) -> None:
        """Fill a reserved slot."""
        self._starting -= 1
        self._sessions[session.id] = session

    def get(self, session_id: str) -> RelaySession | None:
        session = self._sessions.get(session_id)
        return None if session is None or session.ended else session

    def discard(self, session_id: str) -> RelaySession | None:
        return self._sessions.pop(session_id, None)

    def expire_idle(self, now: float) -> list[RelaySession]:
        """End and return the sessions with no open stream and no use for too long."""
        idle = [
            session
            for session in self._sessions.values()
            if session.open_streams == 0 and now - session.last_active > self.idle_timeout
        ]
        for session in idle:
            self.discard(session.id)
            session.close()
        return idle

    def close_all(self) -> list[RelaySession]:
        """End every session (the server is stopping)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for session in sessions:
            session.close()
        return sessions
