"""The tools of a ``--url`` server listed by the proxy itself, when no listing has passed it.

The proxy learns what it must know of each tool (the ``x-mcp-header`` marks a
2026-07-28 call mirrors in ``Mcp-Param-*`` headers, the output schema its cut
results must keep to) from the ``tools/list`` answers it passes on. A client may
call a tool with no listing through this proxy: a stateless client that listed
through another replica of a fleet, or one that keeps its list from before the
proxy started. So the proxy lists the tools itself (every page, within the read
timeout, with the ``io.modelcontextprotocol/*`` ``_meta`` of the client's request):

* :func:`relisted_routing`: a call the server refused with ``HeaderMismatch``
  (HTTP 400), as the revision asks of a client; the call is sent once more if that
  changes its headers, else the refusal reaches the client as it came;
* :func:`list_apart`: before a result of a tool no listing has shown is cut, on a
  thread and a connection of their own, so that the cut keeps to its schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ._httpclient import send_request
from ._listings import ToolListings
from ._revision import answer_result, revision_headers
from ._sse import SseEvent, SseReader

__all__ = [
    "HEADER_MISMATCH", "LIST_SECONDS", "MAX_PAGES", "list_apart", "listing_request",
    "next_cursor", "relisted_routing",
]

#: The JSON-RPC error code of a request whose headers do not match its body.
HEADER_MISMATCH = -32020
#: The pages of tools/list read at most: a server whose cursors never end is not
#: followed for ever.
MAX_PAGES = 20
# The request _meta keys a listing carries over from the refused call: those by
# which a 2026-07-28 request names its revision and its client, not its progress.
_META_PREFIX = "io.modelcontextprotocol/"
# The longest listing read where no max_line_size bounds it.
_MAX_ANSWER = 64 << 20
#: Seconds a listing of the proxy's own may take at most before a call or a cut.
LIST_SECONDS = 30.0

Open = Callable[[str, dict[str, str], bytes], Awaitable[Any]]
Headers = Callable[[dict[str, str]], dict[str, str]]


def _refused_for_headers(refusal: dict[str, Any], routing: dict[str, str]) -> bool:
    error = refusal.get("error")
    return (routing.get("mcp-method") == "tools/call" and isinstance(error, dict)
            and error.get("code") == HEADER_MISMATCH)


async def relisted_routing(
    refusal: dict[str, Any],
    line: bytes,
    routing: dict[str, str],
    listings: ToolListings,
    open_request: Open,
    headers: Headers,
    *,
    max_answer: int | None,
    seconds: float,
) -> dict[str, str] | None:
    """The routing headers to send the call ``line`` with once more, after listing the
    tools again, when the server refused it (``refusal``) for its ``Mcp-Param-*``
    headers and the listing changes them; None: pass the refusal on."""
    if not _refused_for_headers(refusal, routing):
        return None
    call = json.loads(line)
    try:
        await asyncio.wait_for(_list_all(call["params"].get("_meta"), listings, open_request,
                                         headers, max_answer or _MAX_ANSWER), seconds)
    except Exception:  # no listing (refused, cut short, too long, too slow): the refusal stands
        return None
    again = listings.routing(call, [])
    return again if again != routing else None


def list_apart(
    new_client: Callable[[], Any],
    url: str,
    headers: Headers,
    listings: ToolListings,
    meta: Any,
    *,
    max_answer: int | None,
    seconds: float,
) -> list[Any] | None:
    """Every tool the server at ``url`` lists, asked for with a client of
    ``new_client``'s on a thread of its own (any thread may wait for it, the loop of
    the session's exchanges too), within ``seconds`` and 30 s; None if it could not
    be listed."""
    seconds = min(seconds, LIST_SECONDS)
    found: list[list[Any]] = []

    async def go() -> None:
        client = new_client()

        def open_request(method: str, request_headers: dict[str, str], body: bytes) -> Any:
            return send_request(client, url, method, request_headers, body, seconds)

        try:
            found.append(await asyncio.wait_for(_list_all(
                meta, listings, open_request, headers, max_answer or _MAX_ANSWER), seconds))
        finally:
            await client.aclose()

    def run() -> None:
        with contextlib.suppress(Exception):  # not listed: the cut goes on without
            asyncio.run(go())

    thread = threading.Thread(target=run, name="toolcap-list-tools", daemon=True)
    thread.start()
    thread.join(seconds + 5.0)
    return found[0] if found else None


def listing_request(request_id: str, meta: Any, cursor: str | None) -> dict[str, Any]:
    """A ``tools/list`` of the proxy's own (the page after ``cursor``), carrying the
    ``io.modelcontextprotocol/*`` keys of a client request's ``_meta`` (by which a
    2026-07-28 request names its revision and its client; not its progress token)."""
    kept = {k: v for k, v in meta.items() if k.startswith(_META_PREFIX)} if isinstance(
        meta, dict) else {}
    params: dict[str, Any] = {"_meta": kept} if kept else {}
    if cursor is not None:
        params["cursor"] = cursor
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}


def next_cursor(answer: bytes | None) -> str | None:
    """The ``nextCursor`` of a ``tools/list`` answer, if another page follows."""
    found = answer_result(answer) if answer is not None else None
    cursor = found[1].get("nextCursor") if found is not None else None
    return cursor if isinstance(cursor, str) else None


async def _list_all(meta: Any, listings: ToolListings, open_request: Open, headers: Headers,
                    max_answer: int) -> list[Any]:
    """The server's tools, page after page, each answer read for their marks."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        request_id = f"toolcap-{secrets.token_hex(8)}"
        request = listing_request(request_id, meta, cursor)
        body = json.dumps(request).encode()
        response = await open_request("POST", headers(revision_headers(request)), body)
        try:
            answer = await _answer(response, request_id, max_answer)
        finally:
            await response.aclose()
        holder = [answer]
        await asyncio.to_thread(listings.learn, holder)
        found = answer_result(holder[0])
        page = found[1].get("tools") if found is not None else None
        tools.extend(page if isinstance(page, list) else [])
        if (cursor := next_cursor(holder[0])) is None:
            break
    return tools


async def _answer(response: Any, request_id: str, max_answer: int) -> bytes:
    """The answer to ``request_id`` in ``response`` (JSON or an event stream), read
    within ``max_answer`` bytes."""
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}")
    kind = response.headers.get("content-type", "").lower()
    events = SseReader(max_answer) if kind.startswith("text/event-stream") else None
    body = bytearray()
    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            if events is None:
                body += chunk
                if len(body) > max_answer:
                    raise ValueError("answer too long")
                continue
            for event in events.feed(chunk):
                if isinstance(event, SseEvent) and _answers(event.data, request_id):
                    return event.data
    if events is None and _answers(bytes(body), request_id):
        return bytes(body)
    raise ValueError("no answer")


def _answers(data: bytes, request_id: str) -> bool:
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("id") == request_id
