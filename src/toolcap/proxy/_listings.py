"""The ``tools/list`` requests a ``--url`` upstream is answering, and what it lists.

Over Streamable HTTP a request of a revision that names itself (2026-07-28 on)
carries routing headers beside its body (:func:`~toolcap.proxy._revision.revision_headers`),
a ``tools/call`` also the ``Mcp-Param-*`` headers of its tool's marked arguments,
learnt from the upstream's answers to ``tools/list``
(:class:`~toolcap.proxy._paramheaders.ParamHeaders`).
"""

from __future__ import annotations

import logging
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

    def learn(self, holder: list[bytes]) -> None:
        """If the message in ``holder`` answers a ``tools/list`` in flight, learn its
        tools' marks, and leave in ``holder`` the answer without a tool whose marks
        are invalid."""
        if self._in_flight and (listed := self._in_flight.intersection(answered_ids(holder[0]))):
            self._in_flight -= listed
            try:
                holder[0] = self._params.learn(holder[0], self._url)
            except Exception:  # whatever the tools say, the answer still reaches the client
                log.exception("tools/list answer not read for x-mcp-header")
