"""The tools of a server listed by the proxy itself, when no listing has passed it.

The proxy learns what it must know of each tool (the ``x-mcp-header`` marks a
2026-07-28 call mirrors in ``Mcp-Param-*`` headers, the output schema its cut
results must keep to) from the ``tools/list`` answers it passes on. A client may
call a tool with no listing through this proxy: a stateless client that listed
through another replica of a fleet, or one that keeps its list from before the
proxy started. So the proxy lists the tools itself, with the
``io.modelcontextprotocol/*`` ``_meta`` of the client's request:

* ``ListFirst`` (``_listfirst``): the relay, before a call of a tool no listing
  has shown it, whatever the client and the server; the call waits for it;
* :class:`Relister`: a ``--url`` call the server refused with ``HeaderMismatch``
  (HTTP 400) all the same (the tool's marks changed, or that listing failed), as
  the revision asks of a client; the call is sent once more if the listing
  changes its headers, else the refusal reaches the client as it came.

Either lists when :class:`ListingTimes` allows (again for a tool only after
:data:`LIST_EVERY` seconds, or after one that failed; never two within
:data:`LIST_FLOOR`), one listing at a time, reads every page (:data:`MAX_PAGES`
at most, :data:`MAX_LISTING` bytes in all) within a deadline, and says one that
fails in one line on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ._contracts import print_error
from ._listings import ToolListings
from ._long import answered_ids
from ._revision import answer_result, revision_headers
from ._sse import SseEvent, SseReader

__all__ = [
    "HEADER_MISMATCH", "LIST_EVERY", "LIST_FLOOR", "LIST_SECONDS", "MAX_LISTING", "MAX_PAGES",
    "ListingGate", "ListingTimes", "Relister", "listed_page", "listing_failure", "listing_request",
    "not_a_listing",
]

#: The JSON-RPC error code of a request whose headers do not match its body.
HEADER_MISMATCH = -32020
#: The pages of tools/list read at most: a server whose cursors never end is not
#: followed for ever.
MAX_PAGES = 20
#: The bytes of one listing's answers read at most, over all its pages.
MAX_LISTING = 64 << 20
#: Seconds a listing of the proxy's own may take at most.
LIST_SECONDS = 30.0
#: Seconds from one listing of the proxy's own made for a tool to the next one made
#: for it: a server that refuses every call of it, or clients that call a tool it
#: does not list, cost one listing each this long, not one a call.
LIST_EVERY = 30.0
#: Seconds between any two listings of the proxy's own, whatever they are made for.
LIST_FLOOR = 1.0
# Tools whose last listing the gate keeps the time of, at most.
_TOOLS_KEPT = 1024
# The request _meta keys a listing carries over from the client's request: those
# by which a 2026-07-28 request names its revision and its client.
_META_PREFIX = "io.modelcontextprotocol/"
# The JSON of one such value carried over at most: a listing is not made to carry
# a client's megabytes page after page.
_META_VALUE_MAX = 16 << 10

Open = Callable[[str, dict[str, str], bytes], Awaitable[Any]]
Headers = Callable[[dict[str, str]], dict[str, str]]


def listing_request(request_id: str, meta: Any, cursor: str | None) -> dict[str, Any]:
    """A ``tools/list`` of the proxy's own (the page after ``cursor``), carrying the
    ``io.modelcontextprotocol/*`` keys of a client request's ``_meta`` (by which a
    2026-07-28 request names its revision and its client; not its progress token)."""
    kept = {k: v for k, v in meta.items() if k.startswith(_META_PREFIX) and len(
        json.dumps(v)) <= _META_VALUE_MAX} if isinstance(meta, dict) else {}
    params: dict[str, Any] = {"_meta": kept} if kept else {}
    if cursor is not None:
        params["cursor"] = cursor
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}


def listing_failure(exc: Exception, seconds: float) -> str:
    """Why a listing of the proxy's own failed, in a few words."""
    if isinstance(exc, asyncio.TimeoutError):
        return f"no answer within {seconds:g} s"
    return str(exc) or type(exc).__name__


Spawn = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]


class ListingTimes:
    """Whether the proxy may list the tools itself now, for a tool: no sooner than
    :data:`LIST_EVERY` after the last listing made for it (at once again after one
    that failed), and no two listings closer than :data:`LIST_FLOOR`."""

    def __init__(self) -> None:
        self._made_for: dict[str, float] = {}  # when a listing was last made for a tool
        self._last: float | None = None
        self._complete: float | None = None  # when a listing last passed its last page

    def due(self, tool: str) -> bool:
        """Whether a listing for ``tool`` may be made now; if so, it counts as made."""
        now = time.monotonic()
        made = self._made_for.get(tool)
        if (self._last is not None and now - self._last < LIST_FLOOR) or (
                made is not None and now - made < LIST_EVERY) or (
                self._complete is not None and now - self._complete < LIST_EVERY):
            return False
        self._last = now
        if len(self._made_for) >= _TOOLS_KEPT:
            self._made_for.clear()  # names a client makes up do not grow it
        self._made_for[tool] = now
        return True

    def failed(self, tool: str) -> None:
        """The listing made for ``tool`` failed: the next call of it may list again."""
        self._made_for.pop(tool, None)

    def listed(self) -> None:
        """A listing passed its last page: no other is due for a while, for any tool
        (one it did not show is one the server does not have)."""
        self._complete = time.monotonic()

    def changed(self) -> None:
        """The server said its tools changed: a listing may be made at once again."""
        self._complete = None
        self._made_for.clear()


class ListingGate:
    """One listing of the proxy's own at a time on an event loop (callers meanwhile
    wait for it), made when :class:`ListingTimes` allows."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._times = ListingTimes()

    async def list_for(self, tool: str, listing: Callable[[], Awaitable[bool]],
                       spawn: Spawn) -> None:
        """Make ``listing`` (True: it succeeded) for ``tool`` if the gate allows, or wait
        for the one in flight; a caller given up on leaves it to the others."""
        task = self._task
        if task is None:
            if not self._times.due(tool):
                return
            task = self._task = spawn(self._made(tool, listing))
            task.add_done_callback(self._done)
        await asyncio.shield(task)

    async def _made(self, tool: str, listing: Callable[[], Awaitable[bool]]) -> None:
        if not await listing():
            self._times.failed(tool)

    def _done(self, task: asyncio.Task[None]) -> None:
        if self._task is task:
            self._task = None


class Relister:
    """The listings a ``--url`` session makes for calls refused with ``HeaderMismatch``."""

    def __init__(self, url: str, listings: ToolListings, spawn: Spawn) -> None:
        self._url = url
        self._listings = listings
        self._spawn = spawn  # a task of the session's, cancelled when it ends
        self._gate = ListingGate()

    async def routing_after(
        self, refusal: dict[str, Any], line: bytes, routing: dict[str, str],
        open_request: Open, headers: Headers, *, seconds: float,
    ) -> dict[str, str] | None:
        """The routing headers to send the call ``line`` with once more, when the server
        refused it (``refusal``) for its ``Mcp-Param-*`` headers and what a listing
        (this one's, or one made meanwhile) says changes them; None: pass it on."""
        error = refusal.get("error")
        if routing.get("mcp-method") != "tools/call" or not isinstance(error, dict) or (
                error.get("code") != HEADER_MISMATCH):
            return None
        call = json.loads(line)
        again = self._listings.routing(call, [])  # a listing since it was sent may do
        if again == routing:
            tool, meta = call["params"].get("name"), call["params"].get("_meta")
            await self._gate.list_for(str(tool), lambda: self._list(
                meta, tool, open_request, headers, min(seconds, LIST_SECONDS)), self._spawn)
            again = self._listings.routing(call, [])
        return again if again != routing else None

    async def _list(self, meta: Any, tool: Any, open_request: Open, headers: Headers,
                    seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._pages(meta, open_request, headers), seconds)
            return True
        except Exception as exc:  # refused, cut short, too long, too slow: the refusal stands
            print_error(f"toolcap proxy: {self._url} refused a call of {tool!r} for its "
                        f"Mcp-Param-* headers, and listing its tools to learn them failed "
                        f"({listing_failure(exc, seconds)}); the refusal reaches the client")
            return False

    async def _pages(self, meta: Any, open_request: Open, headers: Headers) -> None:
        cursor: str | None = None
        left = MAX_LISTING
        for _ in range(MAX_PAGES):
            request_id = f"toolcap-{secrets.token_hex(8)}"
            request = listing_request(request_id, meta, cursor)
            body = json.dumps(request).encode()
            response = await open_request("POST", headers(revision_headers(request)), body)
            try:
                answer = await _answer(response, request_id, left)
            finally:
                await response.aclose()
            left -= len(answer)
            # Read for the tools' marks (and the next page) off the loop: it may be big.
            cursor = await asyncio.to_thread(_learn_page, self._listings, answer)
            if cursor is None:
                return


def _learn_page(listings: ToolListings, answer: bytes) -> str | None:
    cursor = listed_page(answer)
    listings.learn([answer])
    return cursor


def listed_page(answer: bytes) -> str | None:
    """The next page's cursor of a ``tools/list`` answer that lists tools; raises
    ValueError for any other answer (an error, say), naming it."""
    found = answer_result(answer)
    if found is not None and isinstance(found[1].get("tools"), list):
        cursor = found[1].get("nextCursor")
        return cursor if isinstance(cursor, str) else None
    message: Any = None
    with contextlib.suppress(ValueError, RecursionError):
        message = json.loads(answer) if len(answer) < 65536 else None
    raise ValueError(not_a_listing(message))


def not_a_listing(message: Any) -> str:
    """Why ``message``, the answer to a ``tools/list``, lists no tools, in a few words."""
    error = message.get("error") if isinstance(message, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return (f"the server answered {text[:200]!r}" if isinstance(text, str)
            else "its answer lists no tools")


async def _answer(response: Any, request_id: str, limit: int) -> bytes:
    """The answer to ``request_id`` in ``response`` (a JSON body or an event stream),
    within ``limit`` bytes."""
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}")
    kind = response.headers.get("content-type", "").lower()
    events = SseReader(limit) if kind.startswith("text/event-stream") else None
    body = bytearray()
    read = 0
    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            read += len(chunk)
            if read > limit:
                raise ValueError(f"a listing over {MAX_LISTING >> 20} MB")
            if events is None:
                body += chunk
                continue
            for event in events.feed(chunk):
                if isinstance(event, SseEvent) and request_id in answered_ids(event.data):
                    return event.data
    if events is None:
        return bytes(body)  # the one answer to the one request sent
    raise ValueError("the event stream ended before the answer")
