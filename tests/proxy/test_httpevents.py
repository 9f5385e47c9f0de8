"""The event streams of a ``--url`` upstream, read through the session interface alone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from toolcap.proxy._httpevents import read_events, resume


class _Response:
    """A response whose body arrives in the given chunks."""

    def __init__(self, chunks: list[bytes], status: int = 200) -> None:
        self._chunks = chunks
        self.status_code = status
        self.headers = {"content-type": "text/event-stream"}
        self.closed = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


class _Session:
    """An ``EventSession`` that records what it is asked to do."""

    url = "http://upstream.test/mcp"

    def __init__(self, replies: list[_Response] | None = None) -> None:
        self.delivered: list[bytes] = []
        self.answered: list[list[Any] | None] = []  # the ids each was found to answer
        self.failed: list[tuple[list[Any], str]] = []
        self.opened: list[tuple[str, dict[str, str]]] = []
        self._replies = replies or []

    @property
    def max_event(self) -> int | None:
        return None

    def stream_headers(self) -> dict[str, str]:
        return {"accept": "text/event-stream", "mcp-session-id": "s1"}

    async def open(self, method: str, headers: dict[str, str], body: bytes = b"", *,
                   idle: bool = False) -> Any:
        self.opened.append((method, headers))
        return self._replies.pop(0)

    def deliver(self, holder: list[bytes], initialize: bool,
                answered: list[Any] | None = None) -> None:
        self.delivered.append(holder.pop())
        self.answered.append(answered)

    def fail(self, ids: list[Any], text: str) -> None:
        self.failed.append((list(ids), text))
        ids.clear()


def _event(message: dict[str, Any], event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}data: {json.dumps(message)}\n\n".encode()


def test_events_are_delivered_in_order_and_their_answers_leave_the_waiting_list() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    answer = {"jsonrpc": "2.0", "id": 7, "result": {}}
    priming = b"id: 0\ndata:\n\n"
    session = _Session()
    waiting: list[Any] = [7]
    stream = _event(progress) + _event(answer)
    response = _Response([priming, stream[:10], stream[10:]])

    reader = asyncio.run(read_events(session, response, waiting, False))

    assert [json.loads(m) for m in session.delivered] == [progress, answer]
    assert session.answered == [[], [7]]  # found once, passed on: not parsed again
    assert waiting == []
    assert reader.last_id == "0"


def test_a_stream_cut_short_is_resumed_after_its_last_event_id() -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
    session = _Session([_Response([_event(answer, "e2")])])
    first = _Response([b"retry: 100\n", b"id: e1\ndata:\n\n"])
    waiting: list[Any] = [1]

    async def run() -> None:
        reader = await read_events(session, first, waiting, False)
        await resume(session, reader, waiting, False)

    asyncio.run(run())

    assert session.opened == [("GET", {**session.stream_headers(), "last-event-id": "e1"})]
    assert [json.loads(m) for m in session.delivered] == [answer]
    assert session.failed == []


def test_a_stream_with_no_event_id_cannot_resume_and_its_requests_fail_naming_the_url() -> None:
    session = _Session()
    waiting: list[Any] = [3, 4]

    async def run() -> None:
        reader = await read_events(session, _Response([b": keep-alive\n\n"]), waiting, False)
        await resume(session, reader, waiting, False)

    asyncio.run(run())

    assert session.opened == []
    assert session.failed == [
        ([3, 4], f"{session.url} ended the answer's event stream before the answer")]
