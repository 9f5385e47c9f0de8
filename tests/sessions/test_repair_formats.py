"""Finding tool responses and their tools' names in each conversation format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcap.adapters import anthropic, openai
from toolcap.sessions._repair import ANTHROPIC, CHAT, RESPONSES, RepairError, read_conversation

DATA = Path(__file__).parent.parent / "data" / "repair"


def found(data: object, *, lines: bool = False) -> list[tuple[str, str, list[str]]]:
    text = ("\n".join(json.dumps(item) for item in data) if lines  # type: ignore[attr-defined]
            else json.dumps(data))
    conversation = read_conversation(text.encode(), lines=None)
    assert conversation.lines is lines
    return [(o.where, o.tool, [str(p) for p in o.parts]) for o in conversation.outputs]


def test_chat_tool_names_come_from_tool_calls_in_any_order() -> None:
    messages = [
        {"role": "tool", "tool_call_id": "b", "content": "second"},
        {"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "first_tool"}},
            {"id": "b", "type": "function", "function": {"name": "second_tool"}}]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "one"},
                                                           {"type": "image_url"}]},
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
        {"role": "function", "name": "legacy", "content": "old style"},
    ]
    assert found(messages) == [
        ("message 1", "second_tool", ["second"]),
        ("message 3", "first_tool", ["one"]),
        ("message 4", "unknown", ["orphan"]),
        ("message 5", "legacy", ["old style"]),
    ]


def test_responses_items_by_call_id() -> None:
    items = [
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "hits"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "not a tool response"}]},
    ]
    assert found({"input": items}) == [
        ("message 2", "search", ["hits"]), ("message 4", "apply_patch", ["done"])]


def test_anthropic_tool_results_by_tool_use_id() -> None:
    messages = [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
        {"role": "user", "content": [
            {"type": "text", "text": "here"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "out"},
            {"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"type": "tool_result", "tool_use_id": "t1"},
        ]},
    ]
    assert found({"messages": messages}) == [
        ("message 2", "bash", ["out"]), ("message 2", "bash", ["a", "b"])]


def test_jsonl_of_messages_and_jsonl_of_whole_conversations() -> None:
    chat = [{"role": "assistant", "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "ls"}}]},
        {"role": "tool", "tool_call_id": "x", "content": "files"}]
    assert found(chat, lines=True) == [("line 2", "ls", ["files"])]
    dataset = [{"messages": chat}, {"messages": chat}]
    assert found(dataset, lines=True) == [
        ("line 1, message 2", "ls", ["files"]), ("line 2, message 2", "ls", ["files"])]


def test_formats_are_reported_and_a_bom_is_kept() -> None:
    data = "\ufeff" + json.dumps([
        {"role": "tool", "tool_call_id": "1", "content": "x"},
        {"type": "function_call_output", "call_id": "2", "output": "y"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "3",
                                      "content": "z"}]},
    ])
    conversation = read_conversation(data.encode())
    assert conversation.formats == (CHAT, RESPONSES, ANTHROPIC)
    assert conversation.text.startswith("\ufeff")


@pytest.mark.parametrize("data, message", [
    (b"", "line 1, column 1 (byte offset 0): expected a JSON value"),
    (b'{"a": 1}', "not a conversation"),
    (b'{"role": "tool"}\n[1]\n', "line 2, column 1 (byte offset 17): expected a JSON object"),
    (b'{"role": "tool"}\n{"role": \n "x"}\n', "must fit on one line"),
    (b'[{"role": "tool"}] extra', "unexpected text after the JSON value"),
    (b'["caf\xc3"]', "line 1 (byte offset 5): invalid UTF-8"),
])
def test_unreadable_files_name_the_place(data: bytes, message: str) -> None:
    with pytest.raises(RepairError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_conversation(data)


def test_any_anthropic_block_type_ending_in_tool_use_names_its_results() -> None:
    # The Messages API's call blocks are tool_use, server_tool_use and mcp_tool_use, each
    # with id and name; a kind added later keeps that shape, and its results keep their
    # tool's policy instead of falling to "unknown". The adapter reads them the same way.
    messages = [
        {"role": "assistant", "content": [
            {"type": "mcp_tool_use", "id": "m1", "name": "docs_search", "server_name": "d"},
            {"type": "connector_tool_use", "id": "k1", "name": "crm_lookup", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "m1", "content": "found"},
            {"type": "tool_result", "tool_use_id": "k1", "content": "record"}]},
    ]
    assert found(messages) == [
        ("message 2", "docs_search", ["found"]), ("message 2", "crm_lookup", ["record"])]
    entries = anthropic.message_entries(messages)
    assert [e.result.tool for e in entries if e.result] == ["docs_search", "crm_lookup"]


def test_a_tool_result_outside_a_user_turn_is_not_a_tool_response() -> None:
    # Only user turns carry tool results in the Messages API; the adapter and repair agree.
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash"}]},
        {"role": "assistant", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "not a result"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]
    assert found(messages) == [("message 3", "bash", ["ok"])]


def test_saved_conversations_are_read_as_the_adapters_read_live_ones() -> None:
    for name in ("chat.json", "responses.json", "anthropic.json"):
        data = (DATA / name).read_bytes()
        value = json.loads(data)
        items = value if isinstance(value, list) else value.get("messages") or value["input"]
        reader = {CHAT: openai.chat_entries, RESPONSES: openai.responses_entries,
                  ANTHROPIC: anthropic.message_entries}
        outputs = read_conversation(data).outputs
        (fmt,) = {o.format for o in outputs}
        live = [e.result for e in reader[fmt](items) if e.result is not None]
        assert [(o.tool, o.call_id) for o in outputs] == [(r.tool, r.call_id) for r in live]


@pytest.mark.parametrize("hostile", [
    {"role": "assistant", "tool_calls": 5},
    {"role": "assistant", "tool_calls": [{"id": {"x": 1}, "function": {"name": "f"}}]},
    {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": ["f"]}}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": [1], "name": "f"}]},
    {"role": "assistant", "content": "text"},
    {"type": "function_call", "call_id": {"a": 1}, "name": "f"},
    {"role": "tool", "tool_call_id": {"a": 1}, "content": "x"},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": [2], "content": "y"}]},
    {"type": "function_call_output", "call_id": [3], "output": "z"},
])
def test_misshapen_calls_and_ids_are_read_without_failing(hostile: object) -> None:
    outputs = found([hostile, {"role": "tool", "tool_call_id": "a", "content": "kept"}])
    assert outputs[-1] == ("message 2", "unknown", ["kept"])
    assert all(tool == "unknown" for _, tool, _ in outputs)
