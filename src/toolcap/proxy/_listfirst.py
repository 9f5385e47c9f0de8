"""The tools listed by the relay itself before a call of one no listing has shown.

A client may call a tool it has not listed through this proxy: it keeps its list
from an earlier connection, or it listed through another replica of a fleet. The
cut of such a tool's result must still keep to the tool's output schema, which
only a listing tells (and so, for a 2026-07-28 ``--url`` server, do the call's
``Mcp-Param-*`` headers). So before such a call goes upstream the relay sends a
``tools/list`` of its own (every page: :data:`~toolcap.proxy._relist.MAX_PAGES`
at most, :data:`~toolcap.proxy._relist.MAX_LISTING` bytes in all), with the
call's ``io.modelcontextprotocol/*`` ``_meta``, and holds the call and every
client message after it until the listing is answered, fails, or
:data:`HOLD_SECONDS` pass; then they go on in the order they came. The client's
responses to the server's own requests (sampling, elicitation, roots) are never
held: a server that waits on one before it answers the listing cannot stall it.

The listing's answers reach no client. When a listing is made is
:class:`~toolcap.proxy._relist.ListingTimes`'s rule (at most once a second, for a
tool again only after a while), and one that fails is one line on stderr: the
call then goes on, its result cut without the tool's output schema.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Callable
from typing import Any

from ._contracts import dumps, print_error
from ._relist import MAX_LISTING, MAX_PAGES, ListingTimes, listing_request

__all__ = ["HOLD_SECONDS", "OWN_LISTING", "ListFirst"]

#: Seconds a call waits, at most, for the listing made before it.
HOLD_SECONDS = 10.0
#: The method the relay's pending table notes a page of its own listing under.
OWN_LISTING = "toolcap/list-first"

Send = Callable[[bytes], None]


class ListFirst:
    """The listings one relay makes before calls of tools no listing has shown, and
    the client messages held meanwhile.

    ``send`` writes a line to the upstream and may block; ``run`` runs a callable
    on a thread where blocking is allowed (never the upstream's reader, whose
    answers the listing waits for); ``learn`` takes one page's ``tools/list``
    result (the hooks learn the tools' schemas from it)."""

    def __init__(self, send: Send, run: Callable[[Callable[[], None]], Any],
                 learn: Callable[[dict[str, Any], bool], Any]) -> None:
        self._send = send
        self._run = run
        self._learn = learn
        self._lock = threading.Lock()
        self._times = ListingTimes()
        self._prefix = f"toolcap-list-{secrets.token_hex(6)}-"
        self._ids = itertools.count(1)
        self._held: list[bytes] | None = None  # None: messages pass
        self._flushing = False
        self._listing: _Listing | None = None  # the one in flight
        self._closed = False

    def before_call(self, tool: str, meta: Any) -> str | None:
        """A call of ``tool`` no listing has shown is on its way: the id of the first
        page request of a listing started for it (messages are held from now on),
        or None when none is started (one is in flight, or the rule forbids)."""
        with self._lock:
            if self._closed or self._listing is not None or not self._times.due(tool):
                return None
            listing = self._listing = _Listing(tool, meta, self._own_id())
            if self._held is None:
                self._held = []
            listing.timer = threading.Timer(HOLD_SECONDS, self._expired, (listing,))
            listing.timer.daemon = True
            listing.timer.start()
        line = dumps(listing_request(listing.request_id, meta, None))
        self._run(lambda: self._send(line))
        return listing.request_id

    def hold(self, line: bytes, message: Any = None) -> bool:
        """Keep ``line`` (``message`` parsed, if it is known) back while a listing is
        made (True), or let it pass: answers to the server's own requests always pass."""
        with self._lock:
            if self._held is None or _answers_only(message):
                return False
            self._held.append(line)
            return True

    def answered(self, request_id: Any, message: dict[str, Any], size: int) -> None:
        """Take the upstream's answer to a page request of a listing of ours."""
        result = message.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if isinstance(result, dict) and isinstance(tools, list):
            self._learn(result, True)  # the hooks learn; what they return goes nowhere
        with self._lock:
            listing = self._listing
            if listing is None or listing.request_id != request_id:
                return  # an answer that came after its listing had ended
            listing.left -= size
            if not isinstance(result, dict) or not isinstance(tools, list):
                error = message.get("error")
                text = error.get("message") if isinstance(error, dict) else None
                why = (f"the server answered {text[:200]!r}" if isinstance(text, str)
                       else "its answer lists no tools")
            elif not isinstance(cursor := result.get("nextCursor"), str):
                why = None  # the last page
            elif listing.pages >= MAX_PAGES or listing.left < 0:
                why = None  # what was read is learnt; the rest is given up on
            else:
                listing.pages += 1
                listing.request_id = self._own_id()
                line = dumps(listing_request(listing.request_id, listing.meta, cursor))
                self._run(lambda: self._send(line))
                return
        self._finish(listing, why)

    def unread(self, request_id: Any, why: str) -> bool:
        """The answer to ``request_id`` could not be read (over ``max_line_size``, or
        malformed): the listing it was part of has failed. True if the id is ours."""
        if not self.is_own(request_id):
            return False
        with self._lock:
            listing = self._listing
        if listing is not None and listing.request_id == request_id:
            self._finish(listing, why)
        return True

    def is_own(self, request_id: Any) -> bool:
        """Whether ``request_id`` names a page request of a listing of ours."""
        return isinstance(request_id, str) and request_id.startswith(self._prefix)

    def close(self) -> None:
        """The relay has ended: no timer outlives it."""
        with self._lock:
            listing, self._listing, self._held = self._listing, None, None
            self._closed = True
        if listing is not None and listing.timer is not None:
            listing.timer.cancel()

    def _own_id(self) -> str:
        return f"{self._prefix}{next(self._ids)}"

    def _expired(self, listing: _Listing) -> None:
        self._finish(listing, f"no answer within {HOLD_SECONDS:g} s")

    def _finish(self, listing: _Listing, why: str | None) -> None:
        with self._lock:
            if self._listing is not listing:
                return  # ended already (answered, timed out, or the relay closed)
            self._listing = None
            if why is not None:
                self._times.failed(listing.tool)
            flush = not self._flushing and self._held is not None
            self._flushing = self._flushing or flush
        if listing.timer is not None:
            listing.timer.cancel()
        if why is not None:
            print_error(f"toolcap proxy: listing the tools before a call of {listing.tool!r} "
                        f"failed ({why}); its result is cut without the tool's output schema")
        if flush:
            self._run(self._flush)

    def _flush(self) -> None:
        """Send what was held, in order, and let messages pass again (unless another
        listing started meanwhile: then what comes stays held for it)."""
        while True:
            with self._lock:
                lines = self._held or []
                if not lines:
                    self._flushing = False
                    if self._listing is None:
                        self._held = None
                    return
                self._held = []
            for line in lines:
                self._send(line)


class _Listing:
    """One listing of the relay's own, in flight."""

    def __init__(self, tool: str, meta: Any, request_id: str) -> None:
        self.tool = tool
        self.meta = meta
        self.request_id = request_id  # of the page asked for last
        self.pages = 1
        self.left = MAX_LISTING
        self.timer: threading.Timer | None = None


def _answers_only(message: Any) -> bool:
    """Whether ``message`` (or every message of a batch) answers a request of the
    server's own."""
    items = message if isinstance(message, list) else [message]
    return bool(items) and all(
        isinstance(item, dict) and "id" in item and "method" not in item for item in items)
