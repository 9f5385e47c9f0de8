"""The ``tools/list`` requests a ``--url`` upstream is answering, and what it lists.

Over Streamable HTTP a request of a revision that names itself (2026-07-28 on)
carries routing headers beside its body (:func:`~toolcap.proxy._revision.revision_headers`),
a ``tools/call`` also the ``Mcp-Param-*`` headers of its tool's marked arguments,
learnt from the upstream's answers to ``tools/list``
(:class:`~toolcap.proxy._paramheaders.ParamHeaders`). A request is watched for
until its exchange ends, answered or not (cancelled, failed); a big answer is
read on a thread, off the event loop the sessions of ``--listen`` share.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ._long import answered_ids
from ._paramheaders import ParamHeaders
from ._revision import revision_headers

__all__ = ["ToolListings"]

log = logging.getLogger("toolcap.proxy")


class ToolListings:
    """The routing headers of each message to the upstream at ``url``, and the answers
    to its 2026-07-28 ``tools/list`` requests, read for the tools' marks as they pass."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._params = ParamHeaders()  # the Mcp-Param-* headers of each tool's calls
        self._in_flight: set[str | int] = set()  # ids of 2026-07-28 tools/list

    def routing(self, message: Any, ids: list[Any]) -> dict[str, str]:
        """The routing headers of ``message`` (a request whose revision names itself;
        anything else has none), the ids of its requests ``ids``."""
        routing = revision_headers(message)
        if routing.get("mcp-method") == "tools/call":
            routing.update(self._params.headers(message.get("params")))
        elif routing.get("mcp-method") == "tools/list":
            self._in_flight.update(i for i in ids if isinstance(i, (str, int)))
        return routing

    def settle_when_done(self, task: asyncio.Task[None], ids: list[Any]) -> None:
        """Once ``task``, the exchange that carries ``ids``, has ended (answered, failed or
        cancelled), none of them is awaited any more: a cancelled one is never answered."""
        task.add_done_callback(lambda _task: self.settle(ids))

    def settle(self, ids: list[Any]) -> None:
        """None of ``ids`` is awaited any more."""
        self._in_flight.difference_update(i for i in ids if isinstance(i, (str, int)))

    def answers(self, data: bytes, answered: list[Any] | None = None) -> bool:
        """Whether the message ``data`` (which answers ``answered``, if they are known
        already) answers a ``tools/list`` in flight; those it answers are no longer."""
        if not self._in_flight:
            return False
        ids = answered_ids(data) if answered is None else answered
        listed = self._in_flight.intersection(i for i in ids if isinstance(i, (str, int)))
        self._in_flight -= listed
        return bool(listed)

    def learn(self, holder: list[bytes]) -> None:
        """Learn the marks of the tools the answer in ``holder`` lists, and leave in
        ``holder`` the answer without a tool whose marks are invalid."""
        try:
            holder[0] = self._params.learn(holder[0], self._url)
        except Exception:  # whatever the tools say, the answer still reaches the client
            log.exception("tools/list answer not read for x-mcp-header")

    async def learn_aside(
        self, holder: list[bytes], hand_on: Callable[[list[bytes]], Awaitable[None] | None]
    ) -> None:
        """:meth:`learn` on a thread (a big answer would hold up every session on the
        loop), then ``hand_on`` the answer, on the loop."""
        await asyncio.to_thread(self.learn, holder)
        handled = hand_on(holder)
        if handled is not None:
            await handled
