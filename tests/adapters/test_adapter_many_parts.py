"""Every adapter holds the bound whatever the number of parts of a result.

Past 32,768 parts, the line breaks between parts alone exceed a 32 KB threshold;
the finalizer then delivers fewer parts than it received, and each adapter must
drop the text blocks it no longer has, not send them empty.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from toolcap import Policy
from toolcap.adapters import anthropic, openai
from toolcap.adapters.mcp import bound_call_tool_result_dict
from toolcap.store import MemoryStore

KB = 1024
COUNT = 100_000


def text_bound(blocks: list[dict[str, Any]]) -> int:
    """What the finalizer bounds: the texts joined by line breaks."""
    texts = [block["text"] for block in blocks if block.get("type") == "text"]
    return len("\n".join(texts).encode("utf-8"))


def assert_bounded_and_named(blocks: list[dict[str, Any]], store: MemoryStore) -> None:
    assert text_bound(blocks) <= 32 * KB
    assert len(blocks) < 32 * KB
    (marker,) = [block["text"] for block in blocks if "[toolcap:" in block["text"]]
    (reference,) = [info.ref for info in store.list_artifacts()]
    assert f"full output: {reference}" in marker


def chat(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Chat Completions conversation: one tool call and its result."""
    return [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]


def test_openai_chat_bounds_a_hundred_thousand_text_parts() -> None:
    store = MemoryStore()
    messages = chat([{"type": "text", "text": "x"} for _ in range(COUNT)])
    out = openai.bound_chat_messages(messages, Policy(sink=store, notices=False))
    assert_bounded_and_named(out[1]["content"], store)
    assert len(messages[1]["content"]) == COUNT  # the input is not modified


def test_anthropic_bounds_a_hundred_thousand_text_blocks() -> None:
    store = MemoryStore()
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "t",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": [
            {"type": "text", "text": "x"} for _ in range(COUNT)]}]},
    ]
    out = anthropic.bound_messages(messages, Policy(sink=store, notices=False))
    assert_bounded_and_named(out[1]["content"][0]["content"], store)


def test_the_guard_bounds_a_hundred_thousand_parts_with_no_store() -> None:
    messages = chat([{"type": "text", "text": "x"} for _ in range(COUNT)])
    out = openai.guard_chat_messages(messages, Policy(sink=None, notices=False))
    blocks = out[1]["content"]
    assert text_bound(blocks) <= 32 * KB
    assert sum("[toolcap: output truncated" in block["text"] for block in blocks) == 1


def test_media_blocks_among_dropped_text_blocks_stay() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    content: list[dict[str, Any]] = [{"type": "text", "text": "x"} for _ in range(COUNT)]
    content.insert(COUNT // 2, image)
    messages = chat(content)
    out = openai.bound_chat_messages(messages, Policy(sink=MemoryStore(), notices=False))
    assert image in out[1]["content"]
    assert text_bound(out[1]["content"]) <= 32 * KB


def test_mcp_result_bounds_a_hundred_thousand_text_blocks() -> None:
    store = MemoryStore()
    result = {"content": [{"type": "text", "text": "x"} for _ in range(COUNT)]}
    bounded = bound_call_tool_result_dict(result, Policy(sink=store, notices=False), tool="t")
    assert_bounded_and_named(bounded.result["content"], store)


@pytest.mark.skipif(importlib.util.find_spec("langchain_core") is None,
                    reason="langchain-core is not installed")
def test_langchain_bounds_a_hundred_thousand_text_parts() -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    from toolcap.adapters.langchain import bound_tool_messages

    store = MemoryStore()
    messages = [
        AIMessage(content="", tool_calls=[{"id": "c1", "name": "t", "args": {}}]),
        ToolMessage(content=[{"type": "text", "text": "x"} for _ in range(COUNT)],
                    tool_call_id="c1"),
    ]
    out = bound_tool_messages(messages, Policy(sink=store, notices=False))
    assert_bounded_and_named(list(out[1].content), store)  # type: ignore[arg-type]
