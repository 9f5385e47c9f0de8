"""Under uvicorn, a reply's head and the body sent with it leave in one socket write
(uvicorn writes each ``send`` at once: two writes cost a system call more, and the
client may wake for the head alone). The server's own request/response cycle is
used here, with a transport that records its writes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from toolcap.proxy._asgi import Reply, send_events
from toolcap.proxy._channel import Event

ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


class _Transport:
    """What uvicorn writes, in order, and whether it closed the connection."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed_after: int | None = None  # writes made before close()

    def write(self, data: bytes) -> None:
        assert self.closed_after is None, "a write after the connection was closed"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed_after = len(self.writes)

    def is_closing(self) -> bool:
        return self.closed_after is not None

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _cycle(transport: _Transport, *, keep_alive: bool = True) -> RequestResponseCycle:
    scope: Any = {"type": "http", "method": "POST", "http_version": "1.1", "path": "/mcp",
                  "headers": []}
    return RequestResponseCycle(
        scope=scope, transport=transport, flow=FlowControl(transport),  # type: ignore[arg-type]
        logger=logging.getLogger("test"), access_logger=logging.getLogger("test"),
        access_log=False, default_headers=[], message_event=asyncio.Event(),
        expect_100_continue=False, keep_alive=keep_alive, on_response=lambda: None)


async def _until(done: Any) -> None:
    """Let the loop run until ``done()``, a few hundred turns at most."""
    for _ in range(500):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("the stream did not write")


async def _never() -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


def test_a_quick_sse_answer_is_one_write_of_head_event_and_end() -> None:
    async def run() -> _Transport:
        transport = _Transport()
        cycle = _cycle(transport)
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        queue.put_nowait(("3-1", ANSWER))
        queue.put_nowait(None)
        await send_events(cycle.send, _never, {"mcp-session-id": "s"}, queue, lambda: None,
                          prime="3-0", wait_for_first=True)
        assert cycle.transport is transport  # the cycle has its own transport back
        return transport

    (written,) = asyncio.run(run()).writes
    head, _, body = written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"\r\ncontent-type: text/event-stream" in head
    assert b"id: 3-0\ndata: \n\nid: 3-1\nevent: message\ndata: " + ANSWER + b"\n\n" in body
    assert body.endswith(b"\r\n0\r\n\r\n")  # the chunked body's end, in the same write


def test_a_whole_reply_is_one_write() -> None:
    async def run() -> _Transport:
        transport = _Transport()
        await Reply(400, b'{"error":1}', media_type="application/json").send(
            _cycle(transport).send)
        return transport

    (written,) = asyncio.run(run()).writes
    assert written.startswith(b"HTTP/1.1 400 ")
    assert written.endswith(b"\r\n\r\n" + b'{"error":1}')
    assert b"\r\ncontent-length: 11\r\n" in written


def test_a_connection_closed_after_the_reply_gets_the_reply_first() -> None:
    async def run() -> _Transport:
        transport = _Transport()
        await Reply(204).send(_cycle(transport, keep_alive=False).send)
        return transport

    transport = asyncio.run(run())
    assert len(transport.writes) == 1 and transport.writes[0].startswith(b"HTTP/1.1 204 ")
    assert transport.closed_after == 1  # closed once the held reply was written


def test_a_stream_that_goes_on_writes_each_later_event_at_once() -> None:
    async def run() -> tuple[_Transport, list[int]]:
        transport = _Transport()
        cycle = _cycle(transport)
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        counts: list[int] = []
        task = asyncio.get_running_loop().create_task(send_events(
            cycle.send, _never, {}, queue, lambda: None, prime="4-0"))
        await _until(lambda: transport.writes)
        counts.append(len(transport.writes))  # the head and priming event, at once
        queue.put_nowait(("4-1", ANSWER))
        await _until(lambda: len(transport.writes) > counts[0])
        counts.append(len(transport.writes))
        queue.put_nowait(None)
        await task
        return transport, counts

    transport, counts = asyncio.run(run())
    assert counts == [1, 2]
    assert transport.writes[0].startswith(b"HTTP/1.1 200 ")
    assert transport.writes[0].endswith(b"id: 4-0\ndata: \n\n\r\n")
    assert b"id: 4-1\nevent: message" in transport.writes[1]
