"""What a `--url` upstream learns from its tools/list answers: a request no longer
answered (cancelled, failed) is not watched for ever, the ids an answer was found to
answer are used as found, and a big answer is read off the loop the sessions share."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

import pytest

from toolcap.proxy._handoff import Handoff
from toolcap.proxy._listings import ToolListings

from .proxy_helpers import StubHandler, loopback_http

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
BAD = {"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}


def list_request(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {"_meta": META}}


def list_answer(request_id: Any, padding: int = 0) -> bytes:
    tools = [{"name": "bad", "inputSchema": BAD},
             {"name": "good", "inputSchema": {}, "description": "x" * padding}]
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}}).encode()


def names(answer: bytes) -> list[str]:
    return [tool["name"] for tool in json.loads(answer)["result"]["tools"]]


def test_a_list_request_whose_exchange_was_cancelled_is_no_longer_watched() -> None:
    listings = ToolListings("http://up/mcp")
    assert listings.routing(list_request(5), [5])["mcp-method"] == "tools/list"

    async def unanswered() -> None:
        await asyncio.Event().wait()

    async def run() -> None:
        exchange = asyncio.get_running_loop().create_task(unanswered())
        listings.settle_when_done(exchange, [5])
        await asyncio.sleep(0)
        exchange.cancel()  # its stream was closed: no answer will come
        with contextlib.suppress(asyncio.CancelledError):
            await exchange

    asyncio.run(run())
    assert listings._in_flight == set()
    assert not listings.answers(list_answer(5))


def test_an_answer_is_learnt_once_and_by_the_ids_it_was_found_to_answer() -> None:
    listings = ToolListings("http://up/mcp")
    listings.routing(list_request(7), [7])
    answer = list_answer(7)
    assert not listings.answers(answer, answered=[])  # found to answer nothing: not read
    assert listings.answers(answer, answered=[7])
    holder = [answer]
    listings.learn(holder)
    assert names(holder[0]) == ["good"]  # the tool with an invalid mark is left out
    assert not listings.answers(answer, answered=[7])  # learnt once


def test_a_big_answer_is_learnt_on_a_thread_then_handed_on_on_the_loop() -> None:
    listings = ToolListings("http://up/mcp")
    learnt_on: list[int] = []
    handed: list[tuple[list[str], int]] = []
    learn = listings.learn

    def spying(holder: list[bytes]) -> None:
        learnt_on.append(threading.get_ident())
        learn(holder)

    listings.learn = spying  # type: ignore[method-assign]

    async def run() -> int:
        holder = [list_answer(1, padding=Handoff.INLINE_MAX)]
        await listings.learn_aside(holder, lambda h: handed.append(
            (names(h[0]), threading.get_ident())))
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    assert learnt_on and learnt_on[0] != loop_thread
    assert handed == [(["good"], loop_thread)]


@pytest.mark.parametrize("padding", [0, Handoff.INLINE_MAX])
def test_the_upstream_learns_small_answers_inline_and_big_ones_aside(padding: int) -> None:
    from toolcap.proxy._http import HttpUpstream

    async def run() -> tuple[list[list[str]], bool]:
        upstream = HttpUpstream("http://127.0.0.1:9/mcp", {})
        upstream.use_loop(asyncio.get_running_loop(), lambda size: True)
        got: list[list[str]] = []
        assert upstream._shared is not None
        upstream._shared.on_line = lambda holder: got.append(names(bytes(holder.pop())))
        upstream._listings.routing(list_request(3), [3])
        pending = upstream.deliver([list_answer(3, padding)], False, [3])
        if pending is not None:
            await pending
        return got, pending is not None

    got, aside = asyncio.run(run())
    assert got == [["good"]]
    assert aside == (padding > 0)


class _RefusesWithBigError(StubHandler):
    """Answers every POST with HTTP 400 and the server's own JSON-RPC error, over the
    size that is learnt aside."""

    def do_POST(self) -> None:
        request = self.message()
        error = {"code": -32602, "message": "no", "data": "d" * (2 * Handoff.INLINE_MAX)}
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()
        self.answer(400, body, "application/json")


def test_a_big_error_answer_to_a_list_request_reaches_the_client() -> None:
    from toolcap.proxy._http import HttpUpstream
    from toolcap.proxy._rawhttp import RawClient

    async def run() -> list[dict[str, Any]]:
        with loopback_http(_RefusesWithBigError) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            upstream = HttpUpstream(url, {})
            upstream.use_loop(asyncio.get_running_loop(), lambda size: True)
            upstream._client = RawClient(url, {}, 5.0, 5.0)
            got: list[dict[str, Any]] = []
            assert upstream._shared is not None
            upstream._shared.on_line = lambda holder: got.append(json.loads(holder.pop()))
            request = list_request(3)
            routing = upstream._listings.routing(request, [3])
            await upstream._exchange(json.dumps(request).encode(), [3], routing)
            await upstream._client.aclose()
            return got

    got = asyncio.run(run())
    assert [(answer["id"], answer["error"]["code"]) for answer in got] == [(3, -32602)]
