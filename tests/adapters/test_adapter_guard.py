"""The send-boundary guards do no I/O: nothing stored, printed or logged, in any format."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from toolcap import Config, Policy
from toolcap.adapters import anthropic, openai

BIG = "0123456789 ✓\n" * 100_000
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(bytes(400_000)).decode()}}


class Refusing:
    """An artifact store that records every attempt to use it."""

    def __init__(self) -> None:
        self.calls = 0

    def put(self, data: bytes, *, tool: str | None = None) -> str:
        self.calls += 1
        raise AssertionError("the guard must not store anything")


def _langchain() -> tuple[Any, Any]:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, ToolMessage

    from toolcap.adapters.langchain import guard_tool_messages

    return (guard_tool_messages, [
        AIMessage("", tool_calls=[{"name": "Read", "args": {}, "id": "a"}]),
        ToolMessage(BIG, tool_call_id="a")])


def _requests(index: int) -> tuple[Any, Any]:
    if index == 3:
        return _langchain()
    return [
        (openai.guard_chat_messages, [
            {"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "Read"}}]},
            {"role": "tool", "tool_call_id": "a", "content": BIG}]),
        (openai.guard_responses_input, [
            {"type": "function_call", "call_id": "a", "name": "Read"},
            {"type": "function_call_output", "call_id": "a", "output": [
                {"type": "input_text", "text": BIG},
                {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 400_000}]}]),
        (anthropic.guard_messages, [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Read"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                          "content": [{"type": "text", "text": BIG}, IMAGE]}]}]),
    ][index]


@pytest.mark.parametrize("index", range(4))
def test_guard_stores_prints_and_logs_nothing(
    index: int, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    guard, request = _requests(index)
    sink = Refusing()
    policy = Policy(Config(), sink=sink, notices=True)
    with caplog.at_level(logging.DEBUG, logger="toolcap"):
        guarded = guard(request, policy)
    assert guarded != request  # it did bound something
    assert sink.calls == 0
    assert capsys.readouterr() == ("", "")
    assert caplog.records == []
