"""Requests of a stateless revision (2026-07-28 on) at ``toolcap proxy --listen``.

Such a request stands alone: no ``initialize``, no session id. All of them are
relayed by one session the proxy opens itself and shares between its clients;
their ids are replaced by ids of the proxy's own (clients choose theirs alone, so
two may use the same) and restored on the way back.

Such a client may call a tool it listed through another replica of a fleet (or
before this proxy started): the shared session's relay lists the tools itself
first, as it does for any client (``_listfirst``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ._asgi import Reply
from ._channel import Channel, id_key
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
