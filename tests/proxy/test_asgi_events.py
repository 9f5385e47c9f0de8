"""The SSE answer of `proxy --listen`: a quick answer goes out with its head and its
priming event in one chunk; a slow one still gets its priming event first, alone; a
client that went away ends its stream even when no answer ever comes."""

from __future__ import annotations

import asyncio
from typing import Any

from toolcap.proxy._asgi import send_events
from toolcap.proxy._channel import Event

PRIMING = b"id: 3-0\ndata: \n\n"
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


class _Client:
    """What the server sends, and a connection that stays open."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.body_sent = asyncio.Event()
        self._gone = asyncio.get_running_loop().create_future()

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body":
            self.body_sent.set()

    async def receive(self) -> dict[str, Any]:
        return await asyncio.shield(self._gone)

    def go_away(self) -> None:
        self._gone.set_result({"type": "http.disconnect"})

    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]


def _stream(client: _Client, queue: asyncio.Queue[Event | None], *, wait_for_first: bool,
            ended: list[bool]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(send_events(
        client.send, client.receive, {"mcp-session-id": "s"}, queue,
        lambda: ended.append(True), prime="3-0", wait_for_first=wait_for_first))


def test_a_quick_answer_goes_with_the_head_and_the_priming_event_in_one_chunk() -> None:
    async def run() -> _Client:
        client, queue, ended = _Client(), asyncio.Queue[Event | None](), []
        queue.put_nowait(("3-1", ANSWER))
        queue.put_nowait(None)
        await _stream(client, queue, wait_for_first=True, ended=ended)
        assert ended == [True]
        return client

    client = asyncio.run(run())
    assert [m["type"] for m in client.sent] == ["http.response.start", "http.response.body"]
    (body,) = client.bodies()
    assert body == PRIMING + b"id: 3-1\nevent: message\ndata: " + ANSWER + b"\n\n"
    assert client.sent[-1]["more_body"] is False


def test_a_slow_answer_is_preceded_by_its_priming_event_sent_alone() -> None:
    async def run() -> _Client:
        client, queue, ended = _Client(), asyncio.Queue[Event | None](), []
        task = _stream(client, queue, wait_for_first=True, ended=ended)
        await client.body_sent.wait()  # nothing came: the grace ends, the priming event goes
        assert client.bodies() == [PRIMING]
        queue.put_nowait(("3-1", ANSWER))
        queue.put_nowait(None)
        await task
        return client

    client = asyncio.run(run())
    assert client.sent[0]["type"] == "http.response.start"
    assert client.bodies() == [PRIMING, b"id: 3-1\nevent: message\ndata: " + ANSWER + b"\n\n"]


def test_a_get_stream_sends_its_head_and_priming_event_at_once() -> None:
    async def run() -> _Client:
        client, queue, ended = _Client(), asyncio.Queue[Event | None](), []
        task = _stream(client, queue, wait_for_first=False, ended=ended)
        await client.body_sent.wait()
        assert client.bodies() == [PRIMING]
        queue.put_nowait(None)
        await task
        return client

    assert asyncio.run(run()).bodies() == [PRIMING, b""]


def test_a_post_stream_whose_client_went_away_ends_without_an_answer() -> None:
    async def run() -> list[bool]:
        client, queue, ended = _Client(), asyncio.Queue[Event | None](), []
        task = asyncio.get_running_loop().create_task(send_events(
            client.send, client.receive, {}, queue, lambda: ended.append(True),
            wait_for_first=True))
        client.go_away()
        await task  # no answer is put: only the client's going away can end it
        return ended

    assert asyncio.run(run()) == [True]


def test_many_waiting_events_go_out_in_chunks_of_about_chunk_max_and_all_arrive() -> None:
    from toolcap.proxy._asgi import CHUNK_MAX

    event = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + (
        b"x" * 100_000) + b'"}}'

    async def run() -> _Client:
        client, queue, ended = _Client(), asyncio.Queue[Event | None](), []
        for number in range(40):  # 4 MB waiting at once
            queue.put_nowait((f"3-{number + 1}", event))
        queue.put_nowait(None)
        await _stream(client, queue, wait_for_first=True, ended=ended)
        return client

    bodies = asyncio.run(run()).bodies()
    assert len(bodies) >= 4
    assert all(len(body) < CHUNK_MAX + len(event) + 64 for body in bodies)
    assert b"".join(bodies).count(b"event: message") == 40
