"""Context pressure through the adapters: the SDKs' reported usage tightens the bound."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolcap
from toolcap import Config, Policy
from toolcap.adapters.anthropic import bound_messages
from toolcap.adapters.openai import bound_chat_messages, bound_responses_input
from toolcap.store import MemoryStore

KB = 1024
OUTPUT = "0123456789abcdef\n" * 3000  # 51 KB: over the pressure ceiling once the window fills


def _policy() -> Policy:
    return Policy(Config(context_window="100k tokens", reserve="4k tokens"),
                  sink=MemoryStore(), notices=False)


def _chat(calls: int) -> list[Any]:
    return [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{n}", "type": "function", "function": {"name": "Read", "arguments": ""}}
                for n in range(calls)]},
            *({"role": "tool", "tool_call_id": f"c{n}", "content": OUTPUT} for n in range(calls))]


def _delivered(messages: list[Any]) -> int:
    return sum(len(m["content"].encode()) for m in messages if m.get("role") == "tool")


def test_the_reported_prompt_size_lowers_the_batch_ceiling_of_the_turn(server: Any) -> None:
    openai = pytest.importorskip("openai")
    server.replies = [
        {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": "ok"}}],
         "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}}
        for tokens in (1_000, 80_000)]
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    policy = _policy()
    early = client.chat.completions.create(model="m", messages=[])
    late = client.chat.completions.create(model="m", messages=[])
    roomy = bound_chat_messages(_chat(2), policy, usage=early.usage)  # the SDK's own object
    tight = bound_chat_messages(_chat(2), policy, usage=late.usage)
    left = (100_000 - 4_000 - 80_000) * 3
    assert _delivered(roomy) > 60 * KB  # only the per-tool 32 KB thresholds cut
    assert _delivered(tight) <= left // 2 < _delivered(roomy)


def test_anthropic_usage_counts_cached_input_too() -> None:
    messages: list[Any] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": "z" * 30 * KB}]}]
    usage = {"input_tokens": 10, "cache_read_input_tokens": 85_000, "output_tokens": 1}
    tight = bound_messages(messages, _policy(), usage=usage)
    assert len(tight[2]["content"][0]["content"].encode()) <= (100_000 - 4_000 - 85_010) * 3 // 2
    assert bound_messages(messages, _policy(), usage={"input_tokens": 10})[2] is messages[2]


def test_without_usage_the_messages_are_measured() -> None:
    history: list[Any] = [{"role": "user", "content": "a" * 250 * KB}]
    items = [*history,
             {"type": "function_call", "call_id": "c", "name": "Read", "arguments": ""},
             {"type": "function_call_output", "call_id": "c", "output": "o" * 20 * KB}]
    bounded = bound_responses_input(items, _policy())
    left = (100_000 - 4_000) * 3 - 250 * KB
    assert len(bounded[2]["output"].encode()) <= max(KB, left // 2) < 20 * KB
    assert bound_responses_input(items[1:], _policy())[1] is items[2]


def test_without_a_window_nothing_changes() -> None:
    policy = Policy(Config(), sink=MemoryStore(), notices=False)
    messages = _chat(1)
    assert bound_chat_messages(messages, policy, usage={"prompt_tokens": 10**9}) == \
        bound_chat_messages(messages, policy)


def test_langchain_reads_the_latest_ai_message_usage_metadata() -> None:
    messages_module = pytest.importorskip("langchain_core.messages")
    from toolcap.adapters.langchain import bound_tool_messages

    def conversation(input_tokens: int) -> list[Any]:
        return [messages_module.HumanMessage("go"),
                messages_module.AIMessage("", tool_calls=[{"id": "c", "name": "Read", "args": {}}],
                                          usage_metadata={"input_tokens": input_tokens,
                                                          "output_tokens": 1,
                                                          "total_tokens": input_tokens + 1}),
                messages_module.ToolMessage("q" * 30 * KB, tool_call_id="c")]

    assert len(bound_tool_messages(conversation(1_000), _policy())[2].content) == 30 * KB
    tight = bound_tool_messages(conversation(90_000), _policy())[2].content
    assert len(tight.encode()) <= max(KB, (100_000 - 4_000 - 90_000) * 3 // 2)


# -- in tokens ---------------------------------------------------------------------------


def _tokens_policy() -> Policy:
    return Policy(Config(measure="tokens", context_window="100k tokens", reserve="4k tokens"),
                  sink=MemoryStore(), notices=False)


def _tokens_of(messages: list[Any]) -> int:
    count = toolcap.token_counter()
    return sum(count(m["content"]) for m in messages if m.get("role") == "tool")


def test_under_tokens_the_reported_usage_counts_as_it_is() -> None:
    roomy = bound_chat_messages(_chat(2), _tokens_policy(), usage={"prompt_tokens": 1_000})
    tight = bound_chat_messages(_chat(2), _tokens_policy(), usage={"prompt_tokens": 90_000})
    share = (100_000 - 4_000 - 90_000) // 2
    assert _delivered(roomy) > 60 * KB  # only the per-tool thresholds cut
    assert 0.8 * share <= _tokens_of(tight) <= 1.05 * share


def test_under_tokens_without_usage_the_messages_are_counted_in_tokens() -> None:
    count = toolcap.token_counter()
    history = "東京駅から新幹線に乗って京都へ向かいました。" * 4200  # about 16 tokens each
    items = [{"role": "user", "content": history}, *_chat(2)[1:]]
    taken = count(json.dumps([{"role": "user", "content": history}], ensure_ascii=False))
    share = (100_000 - 4_000 - taken) // 2
    bounded = bound_chat_messages(items, _tokens_policy())
    assert 0 < share < 2 * count(OUTPUT[:32 * KB])  # less than the turn's two outputs
    assert 0.8 * share <= _tokens_of(bounded[1:]) <= 1.05 * share
    # Counted as bytes (3 a token), the same history leaves the turn nothing: the bound
    # would have cut a CJK conversation three times too early.
    in_bytes = Policy(Config(context_window="100k tokens", reserve="4k tokens"),
                      sink=MemoryStore(), notices=False)
    assert _tokens_of(bound_chat_messages(items, in_bytes)[1:]) < 0.5 * share
