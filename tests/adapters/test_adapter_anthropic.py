"""The Anthropic adapter, end to end through the real ``anthropic`` SDK and over real HTTP."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from toolcap import Config, Policy
from toolcap.adapters.anthropic import bound_messages, guard_messages, guard_request
from toolcap.store import MemoryStore

anthropic = pytest.importorskip("anthropic")

KB = 1024
FIVE_MB = "ログ line ✓ 0123456789\n" * (5 * 1024 * 1024 // 28)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 1600  # ~400 KB: base64 over 256 KB
SMALL_PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def _use(use_id: str, name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": {"path": "big.log"}}


def _image(data: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": base64.b64encode(data).decode()}}


TOOLS = [{"name": n, "description": n, "input_schema": {"type": "object"}}
         for n in ("Read", "Screenshot", "Fail")]


def run_tool(name: str) -> Any:
    if name == "Read":
        return {"content": FIVE_MB}
    if name == "Screenshot":
        return {"content": [{"type": "text", "text": "the screen"}, _image(PNG)]}
    return {"content": "Traceback:\n" + FIVE_MB[: 300 * KB], "is_error": True}


def test_messages_loop_sends_the_bounded_results_the_adapter_returned(
    server: Any, policy: Policy, store: MemoryStore
) -> None:
    server.replies = [
        _message([{"type": "text", "text": "Let me look."}, _use("tu_1", "Read"),
                  _use("tu_2", "Screenshot"), _use("tu_3", "Fail")], "tool_use"),
        _message([{"type": "text", "text": "done"}], "end_turn"),
    ]
    client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "summarize big.log"}]
    response = client.messages.create(model="test-model", max_tokens=100,
                                      messages=messages, tools=TOOLS)
    messages.append({"role": "assistant", "content": response.content})  # SDK blocks as given
    results = []
    for block in response.content:
        if block.type == "tool_use":
            results.append({"type": "tool_result", "tool_use_id": block.id,
                            **run_tool(block.name)})
    messages.append({"role": "user", "content": results})
    messages = bound_messages(messages, policy)
    recorded = copy.deepcopy(messages[2]["content"])
    client.messages.create(model="test-model", max_tokens=100, messages=messages, tools=TOOLS)

    sent = server.requests[-1]
    assert sent.path == "/v1/messages"
    assert len(sent.body) < 96 * KB
    wire = sent.json()["messages"]
    assert [b["type"] for b in wire[1]["content"]] == ["text", "tool_use", "tool_use", "tool_use"]
    read, shot, fail = wire[2]["content"]
    assert read["content"].encode("utf-8") == recorded[0]["content"].encode("utf-8")
    assert len(read["content"].encode("utf-8")) <= 32 * KB
    assert store.read_bytes(read["content"].split("full output: ")[1].split(".")[0]) == (
        FIVE_MB.encode("utf-8"))
    assert shot["content"] == recorded[1]["content"]
    assert shot["content"][0] == {"type": "text", "text": "the screen"}
    note = shot["content"][1]["text"]
    assert shot["content"][1]["type"] == "text" and "image image/png" in note
    assert store.read_bytes(note.split("kept as ")[1].rstrip("]")) == PNG
    assert fail["is_error"] is True and fail["content"] == recorded[2]["content"]
    assert fail["content"].startswith("Traceback:") and len(fail["content"].encode()) <= 32 * KB


def test_typed_response_objects_in_history_are_read_and_kept(policy: Policy) -> None:
    from anthropic.types import Message

    reply = Message.model_validate(_message([_use("tu_1", "Read")], "tool_use"))
    messages: list[Any] = [
        {"role": "user", "content": "go"},
        reply,  # the response object itself, as some loops append it
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1",
                                      "content": FIVE_MB[: 100 * KB]}]},
    ]
    config = Config(tools={"Read": {"size_threshold": 8 * KB}})
    out = bound_messages(messages, Policy(config, sink=None, notices=False))
    assert out[1] is reply
    assert len(out[2]["content"][0]["content"].encode()) <= 8 * KB


def test_batch_ceiling_is_shared_across_the_results_of_one_turn() -> None:
    policy = Policy(Config(batch_ceiling=64 * KB), sink=None, notices=False)
    uses = [_use(f"t{i}", "Read") for i in range(3)]
    messages = [
        {"role": "assistant", "content": uses},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t0", "content": FIVE_MB[: 30 * KB]},
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": FIVE_MB[: 30 * KB]}]},
            {"type": "tool_result", "tool_use_id": "t2", "content": "tiny"},
            {"type": "text", "text": "and then?"},
        ]},
    ]
    out = bound_messages(messages, policy)
    blocks = out[1]["content"]
    sizes = [len(blocks[0]["content"].encode()), len(blocks[1]["content"][0]["text"].encode())]
    assert sum(sizes) + 4 <= 64 * KB
    assert blocks[2] is messages[1]["content"][2]  # a small sibling is not starved
    assert blocks[3] is messages[1]["content"][3]


def test_small_images_pass_and_large_ones_are_replaced_even_by_the_guard(policy: Policy) -> None:
    messages = [
        {"role": "assistant", "content": [_use("a", "Screenshot")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                      "content": [_image(SMALL_PNG), _image(PNG)]}]},
    ]
    guarded = guard_messages(messages, policy)
    content = guarded[1]["content"][0]["content"]
    assert content[0] is messages[1]["content"][0]["content"][0]
    assert content[1]["type"] == "text" and "not sent" in content[1]["text"]
    assert "kept as" not in content[1]["text"]  # the guard stores nothing


def test_a_conversation_without_tool_results_is_unchanged(policy: Policy) -> None:
    messages = [{"role": "user", "content": "x" * 100_000},
                {"role": "assistant", "content": [{"type": "text", "text": "y" * 100_000}]}]
    for function in (bound_messages, guard_messages):
        out = function(messages, policy)
        assert out == messages and all(a is b for a, b in zip(out, messages, strict=True))


def test_an_already_bounded_conversation_is_unchanged(policy: Policy) -> None:
    messages: list[Any] = [
        {"role": "assistant", "content": [_use("a", "Read"), _use("b", "Screenshot")]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": FIVE_MB},
            {"type": "tool_result", "tool_use_id": "b", "content": [_image(PNG)]},
        ]},
    ]
    before = copy.deepcopy(messages)
    once = bound_messages(messages, policy)
    assert messages == before  # the input is never modified
    assert bound_messages(once, policy) == once
    guarded = guard_messages(once, policy)
    assert guarded == once and all(a is b for a, b in zip(guarded, once, strict=True))
    request = {"model": "m", "max_tokens": 10, "messages": once}
    assert guard_request(request, policy) == request
