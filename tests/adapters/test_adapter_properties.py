"""Properties of every conversation adapter, on generated conversations.

For any conversation: the input is never modified; every result of the latest
batch fits its threshold and the batch fits the ceiling; the send-boundary guard
bounds every batch of the history; guarding a bounded conversation changes
nothing; bounding twice is bounding once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap import Config, Policy
from toolcap.adapters import anthropic, openai

KB = 1024

unit = st.text(
    alphabet=st.one_of(st.characters(min_codepoint=0x20, max_codepoint=0x7E),
                       st.sampled_from(["\n", "é", "ロ", "✓", "\U0001F600"])),
    min_size=1, max_size=40,
)


@st.composite
def output(draw: st.DrawFn) -> str:
    return draw(unit) * draw(st.integers(min_value=1, max_value=2000))


@st.composite
def turns(draw: st.DrawFn) -> list[list[tuple[str, Any]]]:
    """Turns of tool calls: each call is (tool name, content: str or list of parts)."""
    count = draw(st.integers(min_value=0, max_value=3))
    names = st.sampled_from(["Read", "Grep", "Bash"])
    content = st.one_of(output(), st.lists(output(), min_size=1, max_size=3))
    return [draw(st.lists(st.tuples(names, content), max_size=4)) for _ in range(count)]


def chat(history: list[list[tuple[str, Any]]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for t, calls in enumerate(history):
        ids = [f"c{t}_{i}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, (n, _) in zip(ids, calls, strict=True)]})
        for i, (_, content) in zip(ids, calls, strict=True):
            parts = content if isinstance(content, str) else [
                {"type": "text", "text": p} for p in content]
            messages.append({"role": "tool", "tool_call_id": i, "content": parts})
    return messages


def messages_api(history: list[list[tuple[str, Any]]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for t, calls in enumerate(history):
        ids = [f"t{t}_{i}" for i in range(len(calls))]
        uses = [{"type": "tool_use", "id": i, "name": n, "input": {}}
                for i, (n, _) in zip(ids, calls, strict=True)]
        messages.append({"role": "assistant", "content": uses})
        if calls:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": c if isinstance(c, str)
                 else [{"type": "text", "text": p} for p in c]}
                for i, (_, c) in zip(ids, calls, strict=True)]})
    return messages


def _size(content: Any) -> int:
    if isinstance(content, str):
        return len(content.encode("utf-8"))
    return sum(len(part["text"].encode("utf-8")) for part in content)


def chat_batches(messages: list[dict[str, Any]]) -> list[list[int]]:
    batches: list[list[int]] = []
    for message in messages:
        if message["role"] == "assistant":
            batches.append([])
        elif message["role"] == "tool":
            batches[-1].append(_size(message["content"]))
    return batches


def api_batches(messages: list[dict[str, Any]]) -> list[list[int]]:
    batches: list[list[int]] = []
    for message in messages:
        if message["role"] == "assistant":
            batches.append([])
        elif isinstance(message["content"], list):
            batches[-1] += [_size(b["content"]) for b in message["content"]]
    return batches


Function = Callable[..., Any]
FORMATS: list[tuple[Function, Function, Function, Function]] = [
    (chat, openai.bound_chat_messages, openai.guard_chat_messages, chat_batches),
    (messages_api, anthropic.bound_messages, anthropic.guard_messages, api_batches),
]


@settings(deadline=None, derandomize=True, max_examples=60)
@given(history=turns(), threshold=st.integers(1, 16), ceiling=st.integers(1, 48),
       which=st.sampled_from([0, 1]))
def test_adapters_bound_every_batch_and_are_idempotent(
    history: list[list[tuple[str, Any]]], threshold: int, ceiling: int, which: int
) -> None:
    build, bound, guard, batches = FORMATS[which]
    config = Config(batch_ceiling=ceiling * KB, tools={"*": {"size_threshold": threshold * KB}})
    policy = Policy(config, sink=None, notices=False)
    messages = build(history)
    before = copy.deepcopy(messages)

    once = bound(messages, policy)
    assert messages == before
    latest = batches(once)[-1] if history else []
    assert all(size <= threshold * KB for size in latest)
    assert sum(latest) <= ceiling * KB
    assert bound(once, policy) == once

    guarded = guard(messages, policy)
    assert messages == before
    for batch in batches(guarded):
        assert all(size <= threshold * KB for size in batch)
        assert sum(batch) <= ceiling * KB
    again = guard(guarded, policy)
    assert again == guarded and all(a is b for a, b in zip(again, guarded, strict=True))
    if len(history) <= 1:  # the latest batch is the whole history: already bounded
        assert guard(once, policy) == once
