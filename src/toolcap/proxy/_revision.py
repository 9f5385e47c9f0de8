"""Results the proxy builds itself, as the revision of the request they answer wants them."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
from typing import Any

__all__ = [
    "SESSION_HEADER", "StreamCancels", "answer_result", "empty_tools_list", "for_revision",
    "header_value", "negotiated_revision", "request_headers", "request_revision",
    "revision_headers", "text_result", "wants_result_type",
]

SESSION_HEADER = "mcp-session-id"
_VERSION_HEADER = "mcp-protocol-version"

# The request ``_meta`` key by which revisions from 2026-07-28 on name themselves on
# every request; the revisions negotiated by ``initialize`` never send it.
_PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_HANDSHAKE_REVISIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
# The parameter a request names its subject by, mirrored in the Mcp-Name header.
_NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def request_revision(params: Any) -> str | None:
    """The revision a request names in its ``_meta`` (2026-07-28 on), if any."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(_PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def answer_result(answer: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """An answer (a JSON-RPC message) and its ``result``; None unless it is an object
    whose result is one."""
    try:
        message = json.loads(answer)
    except (ValueError, RecursionError):
        return None
    result = message.get("result") if isinstance(message, dict) else None
    return (message, result) if isinstance(result, dict) else None


def negotiated_revision(answer: bytes) -> str | None:
    """The ``protocolVersion`` an ``initialize`` answer (a JSON-RPC message) names, if any."""
    found = answer_result(answer)
    version = found[1].get("protocolVersion") if found is not None else None
    return version if isinstance(version, str) else None


def revision_headers(message: Any) -> dict[str, str]:
    """The HTTP headers a request of a revision that names itself (2026-07-28 on) carries
    beside its body: the revision, the method and, for a call, a get or a read, its name."""
    params = message.get("params") if isinstance(message, dict) else None
    version, method = request_revision(params), message.get("method") if params else None
    if version is None or not isinstance(method, str) or not _visible(method):
        return {}
    headers = {"mcp-protocol-version": version, "mcp-method": method}
    name = params.get(_NAMED_BY.get(method, "")) if isinstance(params, dict) else None
    if isinstance(name, str):
        headers["mcp-name"] = header_value(name)
    return headers


def request_headers(
    session_id: str | None,
    version: str | None,
    routing: dict[str, str] | None = None,
    *,
    stream_only: bool = False,
) -> dict[str, str]:
    """The headers of a request to an upstream over HTTP: the session's (its id, the
    revision ``initialize`` negotiated) and ``routing`` (those a request of a revision
    that names itself carries, :func:`revision_headers`); ``stream_only``: a GET for
    the session's event stream."""
    headers = {"accept": "text/event-stream"} if stream_only else {
        "accept": "application/json, text/event-stream", "content-type": "application/json"}
    if session_id is not None:
        headers[SESSION_HEADER] = session_id
    if version is not None:
        headers[_VERSION_HEADER] = version
    headers.update(routing or {})
    if not _header_safe(headers.get(_VERSION_HEADER, "")):
        headers.pop(_VERSION_HEADER, None)  # a revision no header can carry: the server judges
    return headers


def _header_safe(value: str) -> bool:
    return _visible(value) and 0 < len(value) < 64


def header_value(text: str) -> str:
    """``text`` as a header of a revision that names itself carries it (``Mcp-Name``,
    ``Mcp-Param-*``): as it is, or, what a header cannot carry as it is (and what looks
    like the encoding), base64 inside ``=?base64?…?=``."""
    plain = _visible(text) and text == text.strip() and not text.startswith("=?base64?")
    return text if plain else (
        f"=?base64?{base64.b64encode(text.encode('utf-8', 'surrogatepass')).decode()}?=")


def _visible(text: str) -> bool:
    return text.isascii() and text.isprintable()


def wants_result_type(params: Any) -> bool:
    """Whether a request's revision (2026-07-28 on) requires ``resultType`` in its result."""
    version = request_revision(params)
    return version is not None and version not in _HANDSHAKE_REVISIONS


def for_revision(result: dict[str, Any], result_type: bool) -> dict[str, Any]:
    """``result`` as the request's revision wants it: a result the proxy builds itself
    is a complete one, never an input request or a task."""
    if result_type and "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """A tools/call result of one text block."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    return {**result, "isError": True} if is_error else result


def empty_tools_list(result_type: bool) -> dict[str, Any]:
    """A tools/list result with no tools; a revision with cached lists (2026-07-28 on)
    is told not to keep it."""
    return {"tools": [], "cacheScope": "private", "ttlMs": 0} if result_type else {"tools": []}


class StreamCancels:
    """Requests in flight on a revision that cancels a request by closing its stream
    (2026-07-28, which sends no cancellation notifications over HTTP), by id."""

    def __init__(self) -> None:
        self._tasks: dict[Any, asyncio.Task[None]] = {}

    def track(self, request_id: str | int, task: asyncio.Task[None]) -> None:
        """Remember the task that carries ``request_id``, until it is done."""
        self._tasks[request_id] = task
        task.add_done_callback(functools.partial(self._forget, request_id))

    def cancel(self, params: Any) -> bool:
        """Cancel the tracked request a ``notifications/cancelled`` names; whether there was
        one (if not, the notification is for the server)."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._tasks.pop(request_id, None) if isinstance(request_id, (str, int)) else None
        if task is None:
            return False
        task.cancel()
        return True

    def _forget(self, request_id: str | int, task: asyncio.Task[None]) -> None:
        if self._tasks.get(request_id) is task:
            del self._tasks[request_id]
