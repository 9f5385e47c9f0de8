"""`toolcap proxy --listen`: a client that loses its stream mid-call resumes it with
Last-Event-ID and gets what followed, once, and nothing else."""

from __future__ import annotations

import json
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.from_thread import BlockingPortal

from helpers import TcpRelay
from proxy.proxy_helpers import BIGSERVER, base_env, text_of, write_config
from proxy.serve_helpers import HttpClient, Listener

REVISION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def listener(artifacts: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    home = tmp_path_factory.mktemp("resume")
    config = write_config(home / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    args = ["--listen", "127.0.0.1:0", "--", sys.executable, str(BIGSERVER)]
    with Listener(args, base_env(artifacts, config), home / "stderr.log") as served:
        yield served


class RawSession:
    """One MCP session over plain HTTP, reading SSE events one at a time."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=60.0)
        self.headers = dict(HEADERS)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": REVISION, "capabilities": {},
            "clientInfo": {"name": "resume", "version": "0"}}}
        reply = self.http.post(url, content=json.dumps(init), headers=self.headers)
        assert reply.status_code == 200, reply.text
        self.headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
        self.headers["Mcp-Protocol-Version"] = REVISION
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        reply = self.http.post(url, content=json.dumps(note), headers=self.headers)
        assert reply.status_code == 202

    def call(self, call_id: int, name: str, arguments: dict[str, Any]) -> httpx2.Response:
        """A tools/call whose SSE response is left open to be read event by event."""
        body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {
            "name": name, "arguments": arguments, "_meta": {"progressToken": f"p{call_id}"}}}
        request = self.http.build_request("POST", self.url, content=json.dumps(body),
                                          headers=self.headers)
        return self.http.send(request, stream=True)

    def resume(self, last_event_id: str) -> httpx2.Response:
        headers = {**self.headers, "Last-Event-ID": last_event_id}
        return self.http.send(self.http.build_request("GET", self.url, headers=headers),
                              stream=True)

    def close(self) -> None:
        self.http.delete(self.url, headers=self.headers)
        self.http.close()


def events(response: httpx2.Response) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
    """Each SSE event as (id, message); a priming event has no message."""
    event_id: str | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and (event_id is not None or data):
            text = "\n".join(data)
            yield event_id, json.loads(text) if text else None
            event_id, data = None, []


def until_answer(stream: Iterator[tuple[str | None, dict[str, Any] | None]], call_id: int
                 ) -> list[tuple[str | None, dict[str, Any] | None]]:
    seen = []
    for event in stream:
        seen.append(event)
        if event[1] is not None and event[1].get("id") == call_id:
            break
    return seen


def progress_of(seen: list[tuple[str | None, dict[str, Any] | None]]) -> list[float]:
    return [m["params"]["progress"] for _, m in seen
            if m is not None and m.get("method") == "notifications/progress"]


def test_a_stream_dropped_mid_call_resumes_with_what_followed_once(listener: Listener) -> None:
    session = RawSession(listener.url)
    try:
        response = session.call(7, "gate", {"token": "t1"})
        stream = events(response)
        primed_id, primed = next(stream)
        assert primed is None and primed_id is not None  # a place to resume from
        first_id, first = next(stream)
        assert first is not None and first["params"]["progress"] == 1
        response.close()  # the connection drops while the call waits at its gate

        opened = session.call(8, "release", {"token": "t1"})
        (_, released), = [e for e in until_answer(events(opened), 8) if e[1] is not None]
        assert "released t1" in json.dumps(released)

        assert first_id is not None
        resumed = session.resume(first_id)
        assert resumed.status_code == 200
        seen = until_answer(events(resumed), 7)
        assert progress_of(seen) == [2]  # what followed the last event seen, not it again
        (answer,) = [m for _, m in seen if m is not None and m.get("id") == 7]
        assert "passed the gate t1" in json.dumps(answer)
        ids = [event_id for event_id, _ in seen]
        stream_no = first_id.split("-")[0]
        assert ids == [f"{stream_no}-{n}" for n in range(2, 2 + len(seen))]

        again = session.resume(primed_id)  # from the start: the whole stream, in order
        assert progress_of(until_answer(events(again), 7)) == [1, 2]
    finally:
        session.close()


def test_a_resumption_from_an_unknown_event_is_refused(listener: Listener) -> None:
    session = RawSession(listener.url)
    try:
        for last_event_id in ("999-1", "garbage", "1-999"):
            response = session.resume(last_event_id)
            assert response.status_code == 410
            response.read()
            assert "cannot resume" in response.json()["error"]["message"]
    finally:
        session.close()


class Cutter(TcpRelay):
    """A TCP relay in front of the proxy that drops, once, the connection whose answer
    carries ``marker``: what a flaky network does to a client mid-call."""

    def __init__(self, target: str, marker: bytes) -> None:
        parts = urllib.parse.urlsplit(target)
        self.marker = marker
        self.cut = threading.Event()
        super().__init__((parts.hostname or "127.0.0.1", parts.port or 80))
        self.url = f"http://127.0.0.1:{self.port}{parts.path}"

    def passes(self, data: bytes, answer: bool) -> bool:
        # The event carrying the marker gets through; the connection then drops.
        if answer and not self.cut.is_set() and self.marker in data:
            self.cut.set()
            return False
        return True


def test_the_sdk_client_resumes_a_dropped_stream_and_gets_the_result_once(
    listener: Listener, portal: BlockingPortal
) -> None:
    cutter = Cutter(listener.url, b"before the gate")
    try:
        with HttpClient(portal, cutter.url) as client:
            progress: list[float] = []
            arrived = anyio.Event()

            async def call() -> Any:
                assert client.session is not None

                async def note(value: float, total: float | None, message: str | None) -> None:
                    progress.append(value)
                    arrived.set()

                async with anyio.create_task_group() as group:
                    outcome: list[Any] = []

                    async def gate() -> None:
                        assert client.session is not None
                        outcome.append(await client.session.call_tool(
                            "gate", {"token": "sdk"}, progress_callback=note))

                    group.start_soon(gate)
                    await arrived.wait()  # the call waits at its gate; its stream is cut
                    await client.session.call_tool("release", {"token": "sdk"})
                return outcome[0]

            result = portal.call(call)
            assert cutter.cut.is_set()
            assert text_of(result) == ["passed the gate sdk"]
            assert progress == [1, 2]  # each once: the resumed stream starts after the first
    finally:
        cutter.close()
