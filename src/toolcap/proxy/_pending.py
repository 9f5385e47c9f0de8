"""The relay's bookkeeping: which client requests are still waiting for an answer.

The relay notes each request whose answer it must change (a tool call, a
resource read, a tools/list page, initialize) when the client sends it, and
takes the note off when the answer comes back. The client's reader thread and
the upstream's reader thread both touch the table, so every access holds one
lock. JSON-RPC ids are JSON values: an unhashable one (an object, an array) is
not valid JSON-RPC and is never tracked.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Pending", "PendingTable"]


@dataclass
class Pending:
    """One request the relay waits to see answered."""

    method: str
    name: str = ""  # tool name or resource URI
    result_type: bool = False  # the request's revision wants resultType in results
    first_page: bool = False
    cancelled: bool = False


class PendingTable:
    """Pending requests by id, shared by the relay's two reader threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[Any, Pending] = {}

    def track(self, call_id: Any, entry: Pending) -> None:
        """Note a request; an unhashable id passes untracked."""
        with self._lock, contextlib.suppress(TypeError):
            self._by_id[call_id] = entry

    def cancel(self, call_id: Any) -> None:
        """The client gave up on a request: its answer is to be dropped."""
        with self._lock, contextlib.suppress(TypeError):
            entry = self._by_id.get(call_id)
            if entry is not None:
                entry.cancelled = True

    def take(self, call_id: Any) -> Pending | None:
        """The request ``call_id`` answers, taken off the table; None if none waits."""
        try:
            with self._lock:
                return self._by_id.pop(call_id, None)
        except TypeError:  # an unhashable id
            return None

    def take_first(self, ids: Iterable[Any]) -> tuple[Pending | None, Any]:
        """The first pending request among ``ids`` and its id, taken off the table."""
        for call_id in ids:
            entry = self.take(call_id)
            if entry is not None:
                return entry, call_id
        return None, None

    def peek(self, call_id: Any) -> Pending | None:
        """The request ``call_id`` answers, left on the table; None if none waits."""
        try:
            with self._lock:
                return self._by_id.get(call_id)
        except TypeError:
            return None

    def drain(self) -> dict[Any, Pending]:
        """Every pending request, taken off the table (the upstream has gone)."""
        with self._lock:
            pending, self._by_id = self._by_id, {}
        return pending
