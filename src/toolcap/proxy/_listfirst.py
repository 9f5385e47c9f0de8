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
Nor is more than :data:`HOLD_MAX` bytes held: past it the listing is given up.

The listing's answers reach no client. When a listing is made is
:class:`~toolcap.proxy._relist.ListingTimes`'s rule: at most once a second, for
a tool again only after a while, and for none while a listing that ended lately
(any: the client's too) is still fresh, unless the server says its tools
changed. So a client calling names the server does not have costs a listing now
and then, not one a call. One that fails is one line on stderr: the call then
goes on, its result cut without the tool's output schema.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._contracts import dumps, print_error
from ._relist import MAX_LISTING, MAX_PAGES, ListingTimes, listing_request, not_a_listing

__all__ = ["HOLD_MAX", "HOLD_SECONDS", "ListFirst"]

log = logging.getLogger("toolcap.proxy")

#: Seconds a call waits, at most, for the listing made before it.
HOLD_SECONDS = 10.0
#: Bytes of client messages held, at most, while a listing is made.
HOLD_MAX = 16 << 20

Send = Callable[[bytes], None]
Run = Callable[[Callable[[], None]], Any]


class ListFirst:
    """The listings one relay makes before calls of tools no listing has shown, and
    the client messages held meanwhile.

    ``send`` writes a line to the upstream and may block; it is called on a thread
    of this object's own (or by ``run``, which tests give), never on the thread
    that reads the upstream, whose answers the listing waits for. ``learn`` takes
    one page's ``tools/list`` result (the hooks learn the tools' schemas from it)."""

    def __init__(self, send: Send, learn: Callable[[dict[str, Any], bool], Any],
                 run: Run | None = None) -> None:
        self._send = send
        self._learn = learn
        self._writer = None if run is not None else ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="toolcap-list-first")
        self._run: Run = run or self._submit
        self._lock = threading.Lock()
        self._progress = threading.Condition(self._lock)  # held lines taken, or let go
        self._times = ListingTimes()
        self._prefix = f"toolcap-list-{secrets.token_hex(6)}-"
        self._ids = itertools.count(1)
        self._held: list[bytes] | None = None  # None: messages pass
        self._held_bytes = 0
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
            self._held_bytes += len(line)
            over = self._listing if self._held_bytes > HOLD_MAX else None
        if over is not None:
            self._finish(over, f"the client sent over {HOLD_MAX >> 20} MB meanwhile",
                         cancel=True)
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
                why = not_a_listing(message)
            elif not isinstance(cursor := result.get("nextCursor"), str):
                why = None  # the last page
                listing.complete = True
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

    def listed(self) -> None:
        """A listing (the client's) passed its last page: the tools are known."""
        with self._lock:
            self._times.listed()

    def changed(self) -> None:
        """The server said its tools changed: what a listing showed is stale."""
        with self._lock:
            self._times.changed()

    def wait_for_room(self) -> None:
        """Block the caller (the thread reading the client, never an event loop) while
        over :data:`HOLD_MAX` bytes are held: the client waits, as on a full pipe."""
        with self._progress:
            self._progress.wait_for(lambda: self._held_bytes <= HOLD_MAX or self._closed)

    def drain(self, timeout: float) -> bool:
        """Wait, ``timeout`` seconds at most, until nothing is held (True): the client
        has gone, and what it sent before must still reach the server."""
        with self._progress:
            return self._progress.wait_for(lambda: self._held is None or self._closed,
                                           timeout)

    def close(self) -> None:
        """The relay has ended: no timer or thread outlives it."""
        with self._lock:
            listing, self._listing, self._held = self._listing, None, None
            self._closed = True
            self._progress.notify_all()
        if listing is not None and listing.timer is not None:
            listing.timer.cancel()
        if self._writer is not None:
            self._writer.shutdown(wait=False, cancel_futures=True)

    def _submit(self, job: Callable[[], None]) -> None:
        assert self._writer is not None
        with contextlib.suppress(RuntimeError):  # shut down: the relay has ended
            self._writer.submit(job)

    def _own_id(self) -> str:
        return f"{self._prefix}{next(self._ids)}"

    def _expired(self, listing: _Listing) -> None:
        self._finish(listing, f"no answer within {HOLD_SECONDS:g} s", cancel=True)

    def _finish(self, listing: _Listing, why: str | None, *, cancel: bool = False) -> None:
        with self._lock:
            if self._listing is not listing:
                return  # ended already (answered, timed out, or the relay closed)
            self._listing = None
            if listing.complete:  # a listing cut short says nothing of the pages it left
                self._times.listed()
            elif why is not None:
                self._times.failed(listing.tool)
            flush = not self._flushing and self._held is not None
            self._flushing = self._flushing or flush
        if listing.timer is not None:
            listing.timer.cancel()
        if why is not None:
            print_error(f"toolcap proxy: listing the tools before a call of {listing.tool!r} "
                        f"failed ({why}); its result is cut without the tool's output schema")
        if cancel:  # the server may stop working on it; its answer is dropped if it comes
            line = dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": listing.request_id, "reason": why}})
            self._run(lambda: self._send(line))
        if flush:
            self._run(self._flush)

    def _flush(self) -> None:
        """Send what was held, in order, and let messages pass again; stop at a
        listing started meanwhile (what is left waits for it, and its end sends it)."""
        try:
            while True:
                with self._lock:
                    if self._listing is not None or not self._held:
                        self._flushing = False
                        if self._listing is None:
                            self._held = None
                            self._progress.notify_all()
                        return
                    lines, self._held, self._held_bytes = self._held, [], 0
                    self._progress.notify_all()
                for line in lines:
                    self._send(line)
        except BaseException:
            with self._lock:  # what was taken is lost; what comes next must not be
                self._flushing = False
                if self._listing is None:
                    self._held, self._held_bytes = None, 0
                    self._progress.notify_all()
            log.exception("sending the messages held for a listing failed")
            raise


class _Listing:
    """One listing of the relay's own, in flight."""

    def __init__(self, tool: str, meta: Any, request_id: str) -> None:
        self.tool = tool
        self.meta = meta
        self.request_id = request_id  # of the page asked for last
        self.pages = 1
        self.left = MAX_LISTING
        self.complete = False  # its last page came
        self.timer: threading.Timer | None = None


def _answers_only(message: Any) -> bool:
    """Whether ``message`` (or every message of a batch) answers a request of the
    server's own."""
    items = message if isinstance(message, list) else [message]
    return bool(items) and all(
        isinstance(item, dict) and "id" in item and "method" not in item for item in items)
