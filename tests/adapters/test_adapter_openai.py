"""The OpenAI adapter, end to end through the real ``openai`` SDK and over real HTTP.

A few lines of agent loop call the SDK (pointed at a recording server on
127.0.0.1), run a tool that returns 5 MB, bound the results, and send the next
request; the body that arrives must hold the bounded text, byte for byte what
the adapter returned.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from toolcap import Config, Policy
from toolcap.adapters.openai import (
    bound_chat_messages,
    bound_responses_input,
    guard_chat_messages,
    guard_chat_request,
    guard_responses_input,
)
from toolcap.store import MemoryStore

openai = pytest.importorskip("openai")

KB = 1024
FIVE_MB = "résumé line ✓ 0123456789\n" * (5 * 1024 * 1024 // 29)
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("Read", "Grep")]


def _completion(tool_calls: list[dict[str, Any]] | None, text: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps({"path": "big.log"})}}


def run_tool(name: str) -> str:
    return FIVE_MB if name == "Read" else "3 matches\n"


def test_chat_loop_sends_the_bounded_text_the_adapter_returned(
    server: Any, policy: Policy, store: MemoryStore
) -> None:
    server.replies = [_completion([_call("call_1", "Read"), _call("call_2", "Grep")]),
                      _completion(None, "done")]
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)

    messages: list[Any] = [{"role": "user", "content": "summarize big.log"}]
    first = client.chat.completions.create(model="test-model", messages=messages, tools=TOOLS)
    reply = first.choices[0].message  # the SDK's own ChatCompletionMessage, kept as is
    messages.append(reply)
    for call in reply.tool_calls or ():
        messages.append({"role": "tool", "tool_call_id": call.id,
                         "content": run_tool(call.function.name)})
    messages = bound_chat_messages(messages, policy)
    recorded = copy.deepcopy(messages[2:])
    client.chat.completions.create(model="test-model", messages=messages, tools=TOOLS)

    sent = server.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert len(sent.body) < 64 * KB
    wire = sent.json()["messages"]
    bounded = recorded[0]["content"]
    assert wire[2]["content"].encode("utf-8") == bounded.encode("utf-8")
    assert wire[3]["content"] == recorded[1]["content"] == "3 matches\n"
    assert wire[1]["tool_calls"][0]["function"]["name"] == "Read"
    assert len(bounded.encode("utf-8")) <= 32 * KB
    reference = bounded.split("full output: ")[1].split(".")[0]
    assert store.read_bytes(reference) == FIVE_MB.encode("utf-8")


def test_chat_loop_with_typed_params_and_text_parts(server: Any, policy: Policy) -> None:
    server.replies = [_completion(None, "ok")]
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    from openai.types.chat import ChatCompletionMessageParam

    messages: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "Read")]},  # type: ignore[list-item]
        {"role": "tool", "tool_call_id": "c1",
         "content": [{"type": "text", "text": FIVE_MB[: 200 * KB]},
                     {"type": "text", "text": "tail part"}]},
    ]
    bounded = bound_chat_messages(messages, policy)
    client.chat.completions.create(model="test-model", messages=bounded)
    parts = server.requests[-1].json()["messages"][2]["content"]
    assert parts == bounded[2]["content"]
    assert parts[1] == {"type": "text", "text": "tail part"}
    assert sum(len(p["text"].encode()) for p in parts) <= 32 * KB


def test_responses_loop_sends_the_bounded_output(server: Any, policy: Policy) -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "Read",
            "arguments": "{}", "status": "completed"}
    server.replies = [
        {"id": "resp_1", "object": "response", "created_at": 0, "model": "test-model",
         "status": "completed", "output": [call], "parallel_tool_calls": True,
         "tool_choice": "auto", "tools": []},
        {"id": "resp_2", "object": "response", "created_at": 0, "model": "test-model",
         "status": "completed", "output": [], "parallel_tool_calls": True,
         "tool_choice": "auto", "tools": []},
    ]
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    items: list[Any] = [{"role": "user", "content": "read it"}]
    response = client.responses.create(model="test-model", input=items)
    items += response.output  # the SDK's ResponseFunctionToolCall objects
    for item in response.output:
        if item.type == "function_call":
            items.append({"type": "function_call_output", "call_id": item.call_id,
                          "output": run_tool(item.name)})
    items = bound_responses_input(items, policy)
    client.responses.create(model="test-model", input=items)

    wire = server.requests[-1].json()["input"]
    assert server.requests[-1].path == "/v1/responses"
    assert wire[1]["call_id"] == "call_1" and wire[1]["name"] == "Read"
    assert wire[2]["output"].encode("utf-8") == items[2]["output"].encode("utf-8")
    assert len(wire[2]["output"].encode("utf-8")) <= 32 * KB
    assert "full output: toolcap:" in wire[2]["output"]


# -- shapes, without the network ------------------------------------------------------


def _turn(*calls: tuple[str, str]) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [_call(call_id, name) for call_id, name in calls]}


def test_batch_ceiling_is_shared_across_the_tool_calls_of_one_turn() -> None:
    policy = Policy(Config(batch_ceiling=64 * KB), sink=None, notices=False)
    calls = [(f"c{i}", "Read") for i in range(4)]
    messages = [{"role": "user", "content": "go"}, _turn(*calls)]
    messages += [{"role": "tool", "tool_call_id": cid, "content": FIVE_MB[: 30 * KB]}
                 for cid, _ in calls]
    out = bound_chat_messages(messages, policy)
    sizes = [len(m["content"].encode()) for m in out[2:]]
    assert sum(sizes) <= 64 * KB
    assert max(sizes) - min(sizes) < 64  # water-fill: cut to a common level


def test_only_the_latest_batch_is_finalized_but_the_guard_checks_history(
    policy: Policy,
) -> None:
    messages = [
        {"role": "user", "content": "go"}, _turn(("a", "Read")),
        {"role": "tool", "tool_call_id": "a", "content": FIVE_MB[: 100 * KB]},
        _turn(("b", "Grep")),
        {"role": "tool", "tool_call_id": "b", "content": "small"},
    ]
    latest = bound_chat_messages(messages, policy)
    assert latest[2] is messages[2]  # history is not the latest batch
    guarded = guard_chat_messages(messages, policy)
    assert len(guarded[2]["content"].encode()) <= 32 * KB
    assert "full output:" not in guarded[2]["content"]  # the guard stores nothing
    assert guarded[4] is messages[4]


def test_tool_names_come_from_the_matching_call() -> None:
    config = Config(tools={"Grep": {"size_threshold": 8 * KB}})
    policy = Policy(config, sink=None, notices=False)
    messages = [_turn(("a", "Read"), ("b", "Grep")),
                {"role": "tool", "tool_call_id": "a", "content": FIVE_MB[: 20 * KB]},
                {"role": "tool", "tool_call_id": "b", "content": FIVE_MB[: 20 * KB]}]
    out = bound_chat_messages(messages, policy)
    assert out[1] is messages[1]
    assert len(out[2]["content"].encode()) <= 8 * KB


def test_a_conversation_without_tool_messages_is_unchanged(policy: Policy) -> None:
    messages = [{"role": "user", "content": "x" * 100_000},
                {"role": "assistant", "content": "y" * 100_000}]
    for function in (bound_chat_messages, guard_chat_messages):
        out = function(messages, policy)
        assert out == messages and all(a is b for a, b in zip(out, messages, strict=True))


def test_an_already_bounded_conversation_is_unchanged(policy: Policy) -> None:
    messages = [_turn(("a", "Read"), ("b", "Read")),
                {"role": "tool", "tool_call_id": "a", "content": FIVE_MB},
                {"role": "tool", "tool_call_id": "b",
                 "content": [{"type": "text", "text": FIVE_MB}]}]
    once = bound_chat_messages(messages, policy)
    assert bound_chat_messages(once, policy) == once
    guarded = guard_chat_messages(once, policy)
    assert guarded == once and all(a is b for a, b in zip(guarded, once, strict=True))
    request = {"model": "m", "messages": once}
    assert guard_chat_request(request, policy) == request


def test_the_input_is_never_modified(policy: Policy) -> None:
    messages = [_turn(("a", "Read")),
                {"role": "tool", "tool_call_id": "a",
                 "content": [{"type": "text", "text": FIVE_MB}]}]
    before = copy.deepcopy(messages)
    bound_chat_messages(messages, policy)
    guard_chat_messages(messages, policy)
    assert messages == before


def test_responses_image_over_the_media_threshold_is_kept_and_named(
    policy: Policy, store: MemoryStore
) -> None:
    png = b"\x89PNG\r\n" + bytes(range(256)) * 2048
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    items = [{"type": "function_call", "call_id": "c", "name": "Screenshot", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c",
              "output": [{"type": "input_text", "text": "the screen"},
                         {"type": "input_image", "image_url": url}]}]
    before = copy.deepcopy(items)
    out = bound_responses_input(items, policy)
    assert items == before
    parts = out[1]["output"]
    assert parts[0] == {"type": "input_text", "text": "the screen"}
    assert parts[1]["type"] == "input_text" and "media limit" in parts[1]["text"]
    reference = parts[1]["text"].split("kept as ")[1].rstrip("]")
    assert store.read_bytes(reference) == png
    assert guard_responses_input(out, policy) == out
    guarded = guard_responses_input(items, policy)
    assert "kept as" not in guarded[1]["output"][1]["text"]  # no I/O: nothing kept


def test_error_like_results_and_unknown_calls_are_bounded_with_the_defaults(
    policy: Policy,
) -> None:
    items = [{"type": "function_call_output", "call_id": "nowhere",
              "output": "Traceback (most recent call last):\n" + FIVE_MB[: 100 * KB]}]
    out = bound_responses_input(items, policy)
    assert len(out[0]["output"].encode()) <= 32 * KB
    assert out[0]["output"].startswith("Traceback")


def test_misshapen_tool_calls_do_not_break_the_guard(policy: Policy) -> None:
    # A conversation loaded from a file may hold anything where a list of calls belongs.
    messages = [
        {"role": "assistant", "content": None, "tool_calls": 5},
        {"role": "assistant", "tool_calls": [{"id": {"x": 1}, "function": {"name": "Read"}}]},
        {"role": "tool", "tool_call_id": {"x": 1}, "content": "x" * (64 * KB)},
    ]
    guarded = guard_chat_messages(messages, policy)
    assert guarded[:2] == messages[:2]
    assert len(guarded[2]["content"].encode()) < 64 * KB
