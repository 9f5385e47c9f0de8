"""Compaction where the loop is: real SDK loops over loopback HTTP, and the prompt cache.

A 50-turn loop of large tool outputs, with the per-turn bound and one compaction
line before each request, keeps every request under the configured window; over a
simulated 200-turn session the conversation's prefix changes only on the turns
where the trigger is crossed.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import toolcap
from toolcap import Policy
from toolcap.adapters.anthropic import bound_messages, compact_messages
from toolcap.adapters.openai import (
    bound_chat_messages,
    compact_chat_messages,
    compact_responses_input,
)
from toolcap.store import MemoryStore

KB = 1024
WINDOW = 400 * KB
TURNS = 50


def tool_output(turn: int) -> str:
    """A large, distinct output: 24 KB of log lines (under the 32 KB per-tool bound)."""
    return "".join(f"turn {turn} line {n}: status ok, 12 items\n" for n in range(700))


def test_openai_chat_loop_of_50_large_outputs_stays_under_the_window(
    server: Any, policy: Policy, store: MemoryStore
) -> None:
    openai = pytest.importorskip("openai")
    server.replies = [
        {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
             "role": "assistant", "content": None, "tool_calls": [
                 {"id": f"call_{t}", "type": "function",
                  "function": {"name": "Read", "arguments": "{}"}}]}}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        for t in range(TURNS)]
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "read all the logs"}]
    for turn in range(TURNS):
        messages = compact_chat_messages(messages, context_window=WINDOW, trigger=0.6,
                                         target=0.4, keep_recent="32KB", policy=policy)
        reply = client.chat.completions.create(model="m", messages=messages, tools=[])
        message = reply.choices[0].message
        messages.append(message)
        for call in message.tool_calls or ():
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": tool_output(turn)})
        messages = bound_chat_messages(messages, policy)
    sizes = [len(request.body) for request in server.requests]
    assert len(sizes) == TURNS and max(sizes) < WINDOW
    assert sum(map(len, (tool_output(t) for t in range(TURNS)))) > 3 * WINDOW
    last = server.requests[-1].json()["messages"]
    assert [m.get("tool_call_id") for m in last if m["role"] == "tool"] == [
        f"call_{t}" for t in range(TURNS - 1)], "every call kept its result, in order"
    first = last[2]["content"]
    reference = first.split("kept as ")[1][:40]
    assert store.read_bytes(reference) == tool_output(0).encode()


def test_anthropic_loop_of_50_large_outputs_stays_under_the_window(
    server: Any, policy: Policy, store: MemoryStore
) -> None:
    anthropic = pytest.importorskip("anthropic")
    server.replies = [
        {"id": "msg", "type": "message", "role": "assistant", "model": "m",
         "content": [{"type": "tool_use", "id": f"tu_{t}", "name": "Read", "input": {}}],
         "stop_reason": "tool_use", "stop_sequence": None,
         "usage": {"input_tokens": 1, "output_tokens": 1}}
        for t in range(TURNS)]
    client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "read all the logs"}]
    for turn in range(TURNS):
        messages = compact_messages(messages, context_window=WINDOW, trigger=0.6, target=0.4,
                                    keep_recent="32KB", policy=policy)
        reply = client.messages.create(model="m", max_tokens=100, messages=messages, tools=[])
        messages.append({"role": "assistant", "content": reply.content})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": block.id, "content": tool_output(turn)}
            for block in reply.content if block.type == "tool_use"]})
        messages = bound_messages(messages, policy)
    sizes = [len(request.body) for request in server.requests]
    assert len(sizes) == TURNS and max(sizes) < WINDOW
    last = server.requests[-1].json()["messages"]
    results = [b for m in last if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"]]
    assert [b["tool_use_id"] for b in results] == [f"tu_{t}" for t in range(TURNS - 1)]
    masked = [b for b in results if b["content"].startswith("[toolcap: compacted ")]
    assert len(masked) > TURNS // 2


def test_the_prompt_prefix_changes_only_when_the_trigger_is_crossed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rng = random.Random(11)
    store = MemoryStore()
    options: dict[str, Any] = dict(trigger="256KB", target="128KB", keep_recent="32KB",
                                   store=store)
    items: list[Any] = [{"role": "user", "content": "work"}]
    changed_turns = crossed_turns = 0
    for turn in range(200):
        size = rng.choice((200, 2_000, 8_000, 20_000, 30_000))
        items = [*items,
                 {"type": "function_call", "call_id": f"c{turn}", "name": "Bash",
                  "arguments": "{}"},
                 {"type": "function_call_output", "call_id": f"c{turn}",
                  "output": f"{turn}:" + "x" * size}]
        sent_before = json.dumps(items)
        new, report = toolcap.compact(items, **options)
        crossed = report.before > report.trigger
        changed = json.dumps(new) != sent_before
        assert changed == crossed == bool(report.masked)
        if changed:  # the prefix up to the first masked output is what a cache keeps
            first = min(int(r.where.split()[1]) for r in report.masked)
            assert new[:first] == items[:first]
        changed_turns += changed
        crossed_turns += crossed
        items = new
    with capsys.disabled():
        print(f"\nprompt cache: the prefix changed on {changed_turns} of 200 turns"
              f" (the trigger was crossed on {crossed_turns})")
    assert 0 < changed_turns < 40


def test_the_responses_one_liner_compacts_items() -> None:
    items: list[Any] = [{"role": "user", "content": "go"}]
    for t in range(6):
        items += [{"type": "function_call", "call_id": f"c{t}", "name": "Read", "arguments": ""},
                  {"type": "function_call_output", "call_id": f"c{t}", "output": "y" * 30_000}]
    new = compact_responses_input(items, trigger="100KB", keep_recent=0, store=MemoryStore())
    assert sum(str(i.get("output", "")).startswith("[toolcap: compacted") for i in new) == 5
