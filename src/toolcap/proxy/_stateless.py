"""Requests of a stateless revision (2026-07-28 on) at ``toolcap proxy --listen``.

Such a request stands alone: no ``initialize``, no session id. All of them are
relayed by one session the proxy opens itself and shares between its clients;
their ids are replaced by ids of the proxy's own (clients choose theirs alone, so
two may use the same) and restored on the way back.

Such a client may call a tool it listed through another replica of a fleet (or
before this proxy started): before the first call of a tool no listing has shown
this proxy, the shared session lists the tools itself, so that the relay knows
what it needs of the tool (the output schema its cut keeps to, the ``Mcp-Param-*``
marks of a ``--url`` server); that answer goes to no client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ._asgi import Reply
from ._channel import Channel, cancel_lines, id_key
from ._contracts import dumps, print_error
from ._relist import (
    LIST_SECONDS,
    MAX_LISTING,
    MAX_PAGES,
    ListingGate,
    listed_page,
    listing_failure,
    listing_request,
)
from ._sessions import RelaySession

__all__ = ["STATELESS_REVISIONS", "SharedSession"]

# Revisions whose requests stand alone: no initialize, no session (2026-07-28 on).
STATELESS_REVISIONS = frozenset({"2026-07-28"})

Found = tuple[RelaySession, Channel] | Reply


class SharedSession:
    """The one session that relays the requests of stateless clients, opened when the
    first comes (and again after it ended), and the proxy's own ids for them."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._lock = asyncio.Lock()
        self._next_id = 0
        self._gate = ListingGate()  # when to list the tools itself
        self._listed_in: str | None = None  # the session it lists in

    async def get(
        self,
        lookup: Callable[[str], Found | None],
        open_session: Callable[[], Awaitable[Found]],
    ) -> Found:
        """The shared session: the one ``lookup`` still finds, or one ``open_session``
        opens (or the reply that says why it could not)."""
        async with self._lock:
            if self._id is not None:
                found = lookup(self._id)
                if found is not None:
                    return found
            found = await open_session()
            if not isinstance(found, Reply):
                self._id = found[0].id
            return found

    def own_ids(
        self, requests: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """``requests`` with ids of the proxy's own, and the clients' ids by the key
        (:func:`~toolcap.proxy._channel.id_key`) of the id that replaced each."""
        originals: dict[str, Any] = {}
        rewritten = []
        for message in requests:
            own_id = self._own_id()
            originals[id_key(own_id)] = message["id"]
            rewritten.append({**message, "id": own_id})
        return rewritten, originals

    def _own_id(self) -> str:
        self._next_id += 1
        return f"toolcap-{self._next_id}"

    async def list_first(
        self, session: RelaySession, channel: Channel, requests: list[dict[str, Any]]
    ) -> None:
        """Before ``requests`` go: if one calls a tool no listing has shown ``session``,
        list the tools through it, or wait for the listing in flight (see ``_relist``)."""
        calls = [m["params"] for m in requests
                 if m.get("method") == "tools/call" and isinstance(m.get("params"), dict)]
        unknown = [name for call in calls if isinstance(name := call.get("name"), str)
                   and not session.hooks.listed_tool(name)]
        if not unknown:
            return
        if self._listed_in != session.id:  # a session opened anew has seen no listing
            self._listed_in, self._gate = session.id, ListingGate()
        meta = calls[0].get("_meta")
        await self._gate.list_for(unknown[0], lambda: self._list(
            session, channel, meta, unknown[0]), asyncio.get_running_loop().create_task)

    async def _list(self, session: RelaySession, channel: Channel, meta: Any,
                    tool: str) -> bool:
        try:
            await asyncio.wait_for(self._pages(session, channel, meta), LIST_SECONDS)
            return True
        except Exception as exc:  # the calls go on, cut without what a listing says
            print_error(f"toolcap proxy: listing the tools before a stateless call of "
                        f"{tool!r} failed ({listing_failure(exc, LIST_SECONDS)}); its result "
                        "is cut without the tool's output schema")
            return False

    async def _pages(self, session: RelaySession, channel: Channel, meta: Any) -> None:
        cursor: str | None = None
        left = MAX_LISTING
        for _ in range(MAX_PAGES):
            own_id = self._own_id()
            exchange = channel.open_post([own_id])
            queue = exchange.queue
            session.open_streams += 1
            try:
                if not session.send(dumps(listing_request(own_id, meta, cursor))):
                    raise ValueError("the session has ended")
                answer = await _answer(queue)
            finally:
                for line in cancel_lines(exchange.waiting):  # unanswered: given up
                    session.send(line)
                channel.close(exchange, queue)
                session.open_streams -= 1
            left -= len(answer)
            if left < 0:
                raise ValueError(f"a listing over {MAX_LISTING >> 20} MB")
            # The relay has read the answer (it learnt from it); the next page off the loop.
            cursor = await asyncio.to_thread(listed_page, answer) if len(answer) > (
                16 << 10) else listed_page(answer)
            if cursor is None:
                return


async def _answer(queue: asyncio.Queue[Any] | None) -> bytes:
    """The answer on a stream that carries only the answer to one request."""
    while queue is not None and (event := await queue.get()) is not None:
        if event[1]:  # not a keep-alive
            return bytes(event[1])
    raise ValueError("the session ended before the answer")
