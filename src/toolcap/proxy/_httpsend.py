"""What a ``--url`` session sends, read once: which requests a message carries, its
routing headers, and whether it must wait for what went before it.

A request goes to the server the moment the client sends it (its answer is read
apart), so that the server is at work on it while the proxy goes on with the
client's side; ``initialize``, notifications and responses go in order, each once
the one before it has been sent (see :class:`~toolcap.proxy._http.HttpUpstream`).
"""

from __future__ import annotations

import json
from typing import Any

from ._listings import ToolListings
from ._revision import wants_result_type

__all__ = ["Outgoing"]


class Outgoing:
    """One message line the client sent, read: its requests' ``ids``, its ``routing``
    headers, the ``method`` and ``params`` of its first message, and what it asks of
    the order of sending (``in_order``; ``initialize``; ``listen``: the session's GET
    stream opens once it is sent)."""

    __slots__ = ("closable", "ids", "in_order", "initialize", "line", "listen", "method", "params",
                 "routing")

    def __init__(self, line: bytes, listings: ToolListings) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None  # not ours to judge: the server answers it
        items = message if isinstance(message, list) else [message]
        requests = [m for m in items if isinstance(m, dict) and "method" in m and "id" in m]
        first: dict[str, Any] = items[0] if items and isinstance(items[0], dict) else {}
        self.line = line
        self.ids: list[Any] = [m["id"] for m in requests]
        self.method = first.get("method")
        self.params = first.get("params")
        self.routing = listings.routing(first, self.ids) if len(items) == 1 else {}
        # initialize goes in order: every later message needs the session it opens.
        self.initialize = any(m.get("method") == "initialize" for m in requests)
        self.in_order = self.initialize or not self.ids
        self.listen = self.method == "notifications/initialized"
        #: The id of a lone request whose revision cancels it by closing its stream.
        self.closable: str | int | None = self.ids[0] if (
            len(self.ids) == 1 and wants_result_type(self.params)
            and isinstance(self.ids[0], (str, int))) else None
