"""The session the proxy shares between stateless clients lists the tools itself before
a call of a tool no listing has shown it: one listing at a time for calls at once, not
again soon after, and again in a session opened anew (which has seen none)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolcap.proxy import _relist
from toolcap.proxy._channel import Channel
from toolcap.proxy._contracts import dumps
from toolcap.proxy._stateless import SharedSession


class FakeRelaySession:
    """A session whose relay answers each tools/list on the loop, as the relay does:
    the tools it lists are known to the session's hooks before the answer goes out."""

    def __init__(self, session_id: str, channel: Channel, sent: list[tuple[str, Any]],
                 *, answers: bool = True, errors: int = 0) -> None:
        self.errors = errors  # listings answered with an error first
        self.id = session_id
        self.open_streams = 0
        self.listed: set[str] = set()
        self.hooks = self
        self._channel = channel
        self._sent = sent
        self._answers = answers

    def listed_tool(self, tool: str) -> bool:
        return tool in self.listed

    def send(self, line: bytes) -> bool:
        message = json.loads(line)
        self._sent.append((self.id, message.get("method")))
        if message.get("method") == "tools/list" and self._answers:
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"],
                                      "result": {"tools": [{"name": "known", "inputSchema": {}}]}}
            failing = self.errors > 0
            if failing:
                self.errors -= 1
                answer = {"jsonrpc": "2.0", "id": message["id"],
                          "error": {"code": -32603, "message": "not now"}}

            def relay() -> None:
                if not failing:
                    self.listed.add("known")
                self._channel.deliver(dumps(answer))

            asyncio.get_running_loop().call_soon(relay)
        return True


def call(tool: str) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": meta}}


def test_calls_at_once_wait_for_one_listing_and_calls_soon_after_make_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_relist, "LIST_FLOOR", 3600.0)

    async def run() -> list[tuple[str, Any]]:
        shared, channel, sent = SharedSession(), Channel(shared=True), []
        session = FakeRelaySession("s1", channel, sent)
        await asyncio.gather(*(shared.list_first(session, channel, [call(name)])  # type: ignore[arg-type]
                               for name in ("known", "known", "made-up")))
        assert session.listed == {"known"}
        await shared.list_first(session, channel, [call("made-up-too")])  # type: ignore[arg-type]
        await shared.list_first(session, channel, [call("known")])  # type: ignore[arg-type]
        return sent

    assert asyncio.run(run()) == [("s1", "tools/list")]


def test_a_session_opened_anew_lists_again() -> None:
    async def run() -> list[tuple[str, Any]]:
        shared, channel, sent = SharedSession(), Channel(shared=True), []
        for session_id in ("s1", "s2"):
            session = FakeRelaySession(session_id, channel, sent)
            await shared.list_first(session, channel, [call("known")])  # type: ignore[arg-type]
            assert session.listed == {"known"}
        return sent

    assert asyncio.run(run()) == [("s1", "tools/list"), ("s2", "tools/list")]


def test_a_listing_that_finds_the_session_ended_is_one_line_and_the_call_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def run() -> None:
        shared, channel = SharedSession(), Channel(shared=True)
        session = FakeRelaySession("s1", channel, [], answers=False)
        channel.end()  # the session's streams end: no answer will come
        await shared.list_first(session, channel, [call("known")])  # type: ignore[arg-type]

    asyncio.run(run())
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("toolcap proxy: listing the tools before a stateless call of 'known'")
    assert line.endswith("its result is cut without the tool's output schema")


def test_a_tool_a_listing_did_not_show_is_listed_for_again_only_after_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_relist, "LIST_FLOOR", 0.0)

    async def run() -> list[tuple[str, Any]]:
        shared, channel, sent = SharedSession(), Channel(shared=True), []
        session = FakeRelaySession("s1", channel, sent)
        for name in ("made-up", "made-up", "made-up-2"):
            await shared.list_first(session, channel, [call(name)])  # type: ignore[arg-type]
        return sent

    # Not again for the same name; a new name (a tool the server may have added) is.
    assert asyncio.run(run()) == [("s1", "tools/list"), ("s1", "tools/list")]


def test_a_listing_answered_with_an_error_is_said_and_made_again_at_the_next_call(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_relist, "LIST_FLOOR", 0.0)

    async def run() -> FakeRelaySession:
        shared, channel = SharedSession(), Channel(shared=True)
        session = FakeRelaySession("s1", channel, [], errors=1)
        for _ in range(2):
            await shared.list_first(session, channel, [call("known")])  # type: ignore[arg-type]
        return session

    assert asyncio.run(run()).listed == {"known"}
    (line,) = capsys.readouterr().err.splitlines()
    assert "failed (the server answered 'not now')" in line
