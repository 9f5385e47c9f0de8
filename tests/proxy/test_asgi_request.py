"""The ASGI request of `proxy --listen`: a body is used only when it arrived whole."""

from __future__ import annotations

import asyncio
from typing import Any

from toolcap.proxy._asgi import BodyBudget, Request


def _request(messages: list[dict[str, Any]], headers: list[tuple[bytes, bytes]]) -> Request:
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0)

    return Request({"method": "POST", "path": "/mcp", "headers": headers}, receive)


def test_a_body_in_pieces_is_read_whole() -> None:
    request = _request([{"type": "http.request", "body": b'{"a":', "more_body": True},
                        {"type": "http.request", "body": b"1}"}], [])
    assert asyncio.run(request.body(64)) == b'{"a":1}'


def test_a_body_cut_short_by_a_disconnect_is_not_used() -> None:
    request = _request([{"type": "http.request", "body": b'{"a": [1, 2', "more_body": True},
                        {"type": "http.disconnect"}], [])
    assert asyncio.run(request.body(64)) == b""


def test_a_body_over_the_limit_is_refused_declared_or_found() -> None:
    declared = _request([], [(b"content-length", b"65")])
    assert asyncio.run(declared.body(64)) == 413
    found = _request([{"type": "http.request", "body": b"x" * 40, "more_body": True},
                      {"type": "http.request", "body": b"x" * 40}], [])
    assert asyncio.run(found.body(64)) == 413


def test_bodies_read_at_once_share_a_budget_counted_as_they_arrive_and_given_back() -> None:
    budget = BodyBudget(100)
    budget.take(60)  # another body, being read
    over = _request([{"type": "http.request", "body": b"x" * 30, "more_body": True},
                     {"type": "http.request", "body": b"x" * 30}], [])
    assert asyncio.run(over.body(1000, budget)) == 503
    assert budget.held == 60  # what it took is given back
    fits = _request([{"type": "http.request", "body": b"x" * 40}], [])
    assert asyncio.run(fits.body(1000, budget)) == b"x" * 40
    assert budget.held == 60
