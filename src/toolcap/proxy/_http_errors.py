"""Why an HTTP upstream failed, in one line a person can act on.

The SDK's transport reports a failed POST as "Server returned an error
response" or "Not Found", and a refused connection or an unknown host as the
end of the whole connection. The proxy's own transport (``_http``) explains
instead: a failed exchange becomes a JSON-RPC error reply that names the URL,
what went wrong and what to try, so the client shows it, the session survives,
and the next request tries again.
"""

from __future__ import annotations

import errno
import json
import socket
import ssl
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

__all__ = [
    "answers_of_refusal", "describe_status", "describe_transport_error", "explain_refusal",
    "is_jsonrpc_error", "read_bounded",
]

# A JSON-RPC error in an error response is read whole up to this size; past it
# the body is not a message we pass on.
_MAX_ERROR_BODY = 1 << 20
# How much of a server's own error text goes into the line.
_SNIPPET_CHARS = 160

_HEADER_HINT = ("give credentials with --header-env Authorization=VAR, VAR holding "
                "'Bearer TOKEN'")


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups (bounded)."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < 64:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(getattr(current, "exceptions", ()))
        todo.extend(x for x in (current.__cause__, current.__context__) if x is not None)


def describe_transport_error(
    url: str, host: str, exc: BaseException, connect_timeout: float, read_timeout: float
) -> str:
    """One line for an exchange that got no HTTP response at all."""
    import httpx2

    for cause in _causes(exc):
        if isinstance(cause, httpx2.ConnectTimeout):
            return (f"cannot connect to {url}: no connection within {connect_timeout:g} s "
                    "(is the host reachable? raise --timeout for a slow network)")
        if isinstance(cause, httpx2.TimeoutException):
            return (f"{url} did not answer within {read_timeout:g} s "
                    "(raise --timeout if the server is slow)")
        if isinstance(cause, ssl.SSLCertVerificationError):
            reason = cause.verify_message or cause.reason or "certificate verify failed"
            return (f"cannot connect to {url}: its TLS certificate was refused ({reason}); "
                    "check the URL, or trust its CA with SSL_CERT_FILE")
        if isinstance(cause, ssl.SSLError):
            return f"cannot connect to {url}: TLS failed ({cause.reason or cause})"
        if isinstance(cause, socket.gaierror):
            return f"cannot connect to {url}: unknown host {host!r} (check the URL)"
        if isinstance(cause, ConnectionRefusedError) or (
            isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
        ):
            return f"cannot connect to {url}: connection refused (is the server running?)"
    for cause in _causes(exc):
        if isinstance(cause, (httpx2.RemoteProtocolError, httpx2.ReadError)):
            return f"{url} closed the connection without an answer ({_one_line(str(cause))})"
    return f"cannot reach {url}: {_one_line(str(exc)) or type(exc).__name__}"


def describe_status(url: str, status: int, body: bytes, in_session: bool) -> str:
    """One line for an HTTP error status, with what to do about it."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    line = f"{url} answered HTTP {status}{' ' + phrase if phrase else ''}"
    if status == 401:
        line += f": {_HEADER_HINT}"
    elif status == 403:
        line += ": the credentials were refused (check the token given with --header-env)"
    elif status == 404:
        line += (": the session expired or the server restarted" if in_session
                 else ": check the URL (no MCP endpoint at that path)")
    elif status == 405:  # an HTTP+SSE endpoint (the transport before 2025-03-26) takes GET only
        line += ": not a Streamable HTTP endpoint (an older HTTP+SSE server?)"
    elif status >= 500:
        line += ": the server failed (see its logs)"
    snippet = _one_line(body[:_SNIPPET_CHARS * 4].decode("utf-8", "replace"))[:_SNIPPET_CHARS]
    return f"{line} [{snippet}]" if snippet else line


def _one_line(text: str) -> str:
    """``text`` with control characters and runs of white space made single spaces."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def is_jsonrpc_error(body: bytes) -> bool:
    """Whether ``body`` is a JSON-RPC error message (a server's own words on a failure)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and isinstance(message.get("error"), dict)


async def read_bounded(response: Any) -> bytes | None:
    """The (decoded) body of an ``httpx2`` error response, or None past the bound."""
    import httpx2

    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > _MAX_ERROR_BODY:
                return None
    except httpx2.HTTPError:
        pass
    return b"".join(chunks)


async def explain_refusal(
    url: str, response: Any, ids: list[Any], in_session: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """An answer with a status of 300 or more: the server's own JSON-RPC errors to pass
    on (see :func:`answers_of_refusal`), and one line saying what went wrong and what to
    do, for the requests of ``ids`` they do not answer (None: they answer all; but for
    refused credentials, 401 or 403, the line is given anyway: the client sees the
    server's words, and only the person who started the proxy can give a token)."""
    status = response.status_code
    body = await read_bounded(response)
    kind = response.headers.get("content-type", "").lower()
    if body is not None and kind.startswith("application/json") and is_jsonrpc_error(body):
        answers = answers_of_refusal(json.loads(body), ids)
        if len(answers) == len(ids) and status not in (401, 403):
            return answers, None
        return answers, describe_status(url, status, body, in_session)
    if status < 400:
        location = _one_line(response.headers.get("location", ""))[:300]
        return [], (f"{url} answered HTTP {status}, a redirect to {location!r}, not followed "
                    "(give that URL with --url if it is the server)")
    return [], describe_status(url, status, body or b"", in_session)


def answers_of_refusal(error: dict[str, Any], ids: list[Any]) -> list[dict[str, Any]]:
    """The server's JSON-RPC ``error`` as answers to the requests of ``ids``: itself, when
    it names one of them; else a copy naming each, for an error with a null id (or
    another's) refuses the POST whole, a batch as one request, and a client matches an
    answer to its request by id (one with none answers nothing: it would wait for ever)."""
    if error.get("id") is not None and error["id"] in ids:
        return [error]
    return [{**error, "id": request_id} for request_id in ids]
