"""What every HTTP request to ``toolcap proxy --listen`` passes before it is served.

Security follows the MCP spec: the ``Origin`` of a browser is refused unless it
is loopback or allowed (a page must not drive a local proxy), and a token, when
set, is checked as a bearer token in constant time (the checks themselves are in
:mod:`toolcap.proxy._listen`). A refusal is a JSON-RPC error in an HTTP response.
"""

from __future__ import annotations

from ._asgi import Reply, Request
from ._contracts import dumps
from ._listen import ServeOptions, bearer_valid, origin_allowed

__all__ = ["error_response", "refusal"]

_INVALID_REQUEST = -32600


def error_response(
    status: int, text: str, code: int = _INVALID_REQUEST, headers: dict[str, str] | None = None
) -> Reply:
    """An HTTP ``status`` whose body is a JSON-RPC error (``id`` null) saying ``text``."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
    return Reply(status, dumps(body), headers=headers, media_type="application/json")


def refusal(request: Request, options: ServeOptions) -> Reply | None:
    """The response refusing ``request`` (Origin, token), or None to serve it."""
    origin = request.headers.get("origin")
    if origin is not None and not origin_allowed(origin, options.allowed_origins):
        return error_response(
            403,
            f"toolcap proxy: Origin {origin[:200]!r} is not allowed; "
            "start the proxy with --allow-origin ORIGIN to allow it",
        )
    token = options.auth_token
    if token is not None and not bearer_valid(request.headers.get("authorization"), token):
        return error_response(
            401,
            "toolcap proxy: a valid 'Authorization: Bearer TOKEN' header is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return None
