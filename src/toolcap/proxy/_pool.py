"""The sessions of ``toolcap proxy --listen``: opened, ended, reaped when idle.

Each session is a :class:`~toolcap.proxy._sessions.RelaySession` (its upstream
started on one long-lived thread) and a :class:`~toolcap.proxy._channel.Channel`
that routes what its relay writes to the client's streams.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ._asgi import Reply
from ._channel import Channel
from ._contracts import Hooks, Upstream, print_error
from ._guard import error_response as _error
from ._listen import ServeOptions
from ._room import Room
from ._sessions import RelaySession, SessionTable
from ._upstream import UpstreamStartError

__all__ = ["SessionPool"]

log = logging.getLogger("toolcap.proxy")


class SessionPool:
    """The sessions being served, each with its channel, by session id."""

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
        # Upstream processes are spawned from one long-lived thread: on Linux
        # they are told to stop when the thread that spawned them ends.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolcap-spawn")

    def lookup(self, session_id: str) -> tuple[RelaySession, Channel] | None:
        """The session ``session_id`` and its channel, if it is still served."""
        session = self.table.get(session_id)
        channel = self._channels.get(session_id)
        return None if session is None or channel is None else (session, channel)

    async def open(self, *, shared: bool = False) -> tuple[RelaySession, Channel] | Reply:
        """A new session and its channel (``shared``: the stateless clients' one), or
        the reply that says why none could be opened."""
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
        # What the client has yet to read, bounded (_room.py). Not for the session
        # stateless clients share: one of them reading slowly would stop them all,
        # and their streams carry only the answers to their own requests.
        room = None if shared else Room()
        channel = Channel(shared=shared, room=room)
        holder: list[RelaySession] = []
        hooks = self._make_hooks()
        use_loop = getattr(upstream, "use_loop", None)
        if use_loop is not None:  # a URL: its exchanges run on this loop, no thread between
            use_loop(loop, lambda size: hooks.fits(None, size), room)
        session = RelaySession(
            upstream,
            hooks,
            loop,
            channel.deliver,
            lambda: self._ended(holder[0], channel),
            room,
            threads_wait=use_loop is None,
        )
        holder.append(session)
        self._channels[session.id] = channel
        self.table.add(session)
        session.start()
        return session, channel

    def _ended(self, session: RelaySession, channel: Channel) -> None:
        """The relay ended on its own (its upstream died): so does the session."""
        self.end(session, channel)

    def end(self, session: RelaySession, channel: Channel) -> None:
        """End ``session`` (and its upstream) and its channel's streams."""
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
