"""What every HTTP request to ``toolcap proxy --listen`` passes before it is served.

Security follows the MCP spec: the ``Origin`` of a browser is refused unless it
is loopback or allowed (a page must not drive a local proxy), and a token, when
set, is checked as a bearer token in constant time (the checks themselves are in
:mod:`toolcap.proxy._listen`). A refusal is a JSON-RPC error in an HTTP response.
A message that is not JSON-RPC 2.0 is refused too (:func:`rpc_problem`): a server
may ignore it, and its client would then wait for an answer for ever.
"""

from __future__ import annotations

from typing import Any

from ._asgi import Reply, Request
from ._contracts import dumps
from ._listen import ServeOptions, bearer_valid, origin_allowed

__all__ = ["error_response", "refusal", "rpc_problem"]

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


def rpc_problem(messages: list[dict[str, Any]]) -> str | None:
    """Why the messages of one POST are not JSON-RPC 2.0 as MCP has it (one line, naming
    the message of a batch), or None if each is a request, a notification or a response."""
    for index, message in enumerate(messages):
        problem = _message_problem(message)
        if problem is not None:
            where = f"message {index + 1} of the batch" if len(messages) > 1 else "the message"
            return f"{where} is not JSON-RPC 2.0: {problem}"
    return None


def _message_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "method" in message:  # a request, or a notification (no id)
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "id" in message and not _valid_id(message["id"]):
            return 'a request\'s "id" must be a string or an integer'
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return '"params" must be an object or an array'
        return None
    if "id" not in message:
        return 'a message needs a "method" (a request, a notification) or an "id" (a response)'
    if ("result" in message) == ("error" in message):
        return 'a response needs one of "result" and "error"'
    if message["id"] is None and "error" in message:
        return None  # an error about a request whose id could not be read
    if not _valid_id(message["id"]):
        return 'a response\'s "id" must be a string or an integer'
    return None


def _valid_id(value: Any) -> bool:
    # MCP: a string or an integer, never null (a bool is no integer here).
    return type(value) is str or type(value) is int
