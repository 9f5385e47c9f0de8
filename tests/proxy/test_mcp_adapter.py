"""The bounding of MCP results (toolcap.adapters.mcp), in process, with the SDK's real types."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from mcp_types import (
    CallToolResult,
    ImageContent,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)

from helpers import REF, reference_of
from toolcap import Config, Policy
from toolcap.adapters.mcp import (
    bound_call_tool_result,
    bound_call_tool_result_dict,
    bound_read_resource_result,
    bound_read_resource_result_dict,
    resource_tool_name,
)
from toolcap.store import MemoryStore

KB = 1024


def policy(store: Any = None, **tools: Any) -> Policy:
    config = Config.from_mapping(
        {"media_threshold": "8KB", "tools": {"*": {"size_threshold": "4KB", **tools}}}
    )
    return Policy(config, sink=store if store is not None else MemoryStore(), notices=False)


def test_an_sdk_result_comes_back_as_an_sdk_result_bounded() -> None:
    big = "x" * 50_000
    result = CallToolResult(content=[TextContent(text=big)], structured_content={"v": big})
    bounded = bound_call_tool_result(result, policy(), tool="t")
    assert isinstance(bounded, CallToolResult)
    (block,) = bounded.content
    assert isinstance(block, TextContent)
    assert len(block.text.encode()) <= 4 * KB
    assert reference_of(big.encode()) in block.text
    # The structured twin is cut by structure to the same bound, naming its own original.
    structured = bounded.structured_content
    assert structured is not None and set(structured) == {"v"}
    assert len(json.dumps(structured).encode()) <= 4 * KB
    assert reference_of(json.dumps({"v": big}, separators=(",", ":")).encode()) in structured["v"]


def test_a_result_within_budget_is_the_same_object() -> None:
    result = CallToolResult(content=[TextContent(text="small")], structured_content={"v": 1})
    assert bound_call_tool_result(result, policy(), tool="t") is result
    as_dict = {"content": [{"type": "text", "text": "small"}], "structuredContent": {"v": 1}}
    assert bound_call_tool_result(as_dict, policy(), tool="t") is as_dict


def test_the_input_dict_is_not_modified() -> None:
    as_dict = {"content": [{"type": "text", "text": "y" * 20_000}]}
    before = repr(as_dict)
    bound_call_tool_result_dict(as_dict, policy(), tool="t")
    assert repr(as_dict) == before


def test_audio_over_the_media_threshold_is_stored_and_named() -> None:
    store = MemoryStore()
    data = bytes(range(256)) * 64  # 16 KB, 21.3 KB as base64: media are measured as sent
    result = {
        "content": [
            {"type": "audio", "data": base64.b64encode(data).decode(), "mimeType": "audio/wav"}
        ]
    }
    bounded = bound_call_tool_result_dict(result, policy(store), tool="t")
    (block,) = bounded.result["content"]
    assert block["type"] == "text"
    assert block["text"].startswith("[audio audio/wav of 21.3 KB not sent: over the 8.0 KB")
    assert bounded.artifacts == (reference_of(data),)
    assert store.read_bytes(reference_of(data)) == data


def test_media_passes_when_the_media_threshold_is_unlimited() -> None:
    image = ImageContent(data=base64.b64encode(b"\0" * 20_000).decode(), mime_type="image/png")
    result = CallToolResult(content=[image])
    assert bound_call_tool_result(result, policy(), tool="t", media_threshold=None) is result


def test_a_store_failure_still_bounds_and_names_no_artifact() -> None:
    class Broken:
        def put(self, data: bytes, *, tool: str | None = None) -> str:
            raise OSError(28, "No space left on device")

    data = b"\1" * 20_000
    result = {
        "content": [
            {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"},
            {"type": "text", "text": "z" * 30_000},
        ]
    }
    bounded = bound_call_tool_result_dict(result, policy(Broken()), tool="t")
    replaced, text = bounded.result["content"]
    assert "could not be kept" in replaced["text"]
    assert not REF.search(replaced["text"] + text["text"])
    assert len(text["text"].encode()) <= 4 * KB
    assert bounded.artifacts == ()


def test_no_spill_for_a_tool_keeps_nothing() -> None:
    store = MemoryStore()
    result = {"content": [{"type": "text", "text": "w" * 30_000}]}
    bounded = bound_call_tool_result_dict(result, policy(store, spill=False), tool="t")
    assert not REF.search(bounded.result["content"][0]["text"])
    assert store.list_artifacts() == []


def test_oversized_structured_content_next_to_small_text_is_cut_kept_and_announced() -> None:
    store = MemoryStore()
    rows = ["r" * 100] * 100
    result = {
        "content": [{"type": "text", "text": "see data"}],
        "structuredContent": {"rows": rows},
    }
    bounded = bound_call_tool_result_dict(result, policy(store), tool="t")
    structured = bounded.result["structuredContent"]
    assert len(json.dumps(structured).encode()) <= 4 * KB
    assert structured["rows"][0] == rows[0] and structured["rows"][-1] == rows[-1]
    (ref,) = bounded.artifacts
    assert any(ref in row for row in structured["rows"])  # the elision note names it
    first, note = bounded.result["content"]
    assert first == {"type": "text", "text": "see data"}
    assert "structuredContent" in note["text"] and ref in note["text"]
    assert json.loads(store.read_bytes(ref)) == {"rows": rows}


def test_error_results_stay_errors_when_cut() -> None:
    result = {"content": [{"type": "text", "text": "e" * 30_000}], "isError": True}
    bounded = bound_call_tool_result_dict(result, policy(), tool="t")
    assert bounded.result["isError"] is True
    assert len(bounded.result["content"][0]["text"].encode()) <= 4 * KB


@pytest.mark.parametrize(
    ("uri", "name"),
    [
        ("file:///a/b.txt", "resource:file"),
        ("big://text/1", "resource:big"),
        ("x", "resource:unknown"),
    ],
)
def test_resources_are_bounded_under_a_policy_named_by_their_scheme(uri: str, name: str) -> None:
    assert resource_tool_name(uri) == name


def test_a_resource_blob_over_the_media_threshold_becomes_a_text_entry() -> None:
    store = MemoryStore()
    data = b"\2" * 20_000
    result = {
        "contents": [
            {
                "uri": "file:///x.bin",
                "mimeType": "application/octet-stream",
                "blob": base64.b64encode(data).decode(),
            }
        ]
    }
    bounded = bound_read_resource_result(result, policy(store), uri="file:///x.bin")
    (entry,) = bounded["contents"]  # the same kind as given, as bound_call_tool_result
    assert entry["uri"] == "file:///x.bin"
    assert entry["mimeType"] == "text/plain"
    assert reference_of(data) in entry["text"]
    assert "blob" not in entry


def test_a_resource_result_comes_back_as_the_kind_it_was_given() -> None:
    text = "r" * 50_000
    model = ReadResourceResult(contents=[TextResourceContents(uri="file:///r.txt", text=text)])
    bounded = bound_read_resource_result(model, policy(MemoryStore()), uri="file:///r.txt")
    assert isinstance(bounded, ReadResourceResult)
    assert "[toolcap:" in bounded.contents[0].text
    as_dict = bound_read_resource_result_dict(
        model.model_dump(mode="json", exclude_none=True), policy(), uri="file:///r.txt"
    )
    assert as_dict.changed and isinstance(as_dict.result, dict)
    small = ReadResourceResult(contents=[TextResourceContents(uri="file:///r.txt", text="ok")])
    assert bound_read_resource_result(small, policy(), uri="file:///r.txt") is small


def wire_policy(store: Any, threshold: str) -> Policy:
    config = Config.from_mapping(
        {"batch_ceiling": "unlimited", "tools": {"*": {"size_threshold": threshold}}}
    )
    return Policy(config, sink=store, notices=False)


def json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode())


def test_a_block_only_the_wire_budget_cuts_is_kept_and_named() -> None:
    store = MemoryStore()
    original = "\x01" * 20_000  # 20 KB of text, 120 KB of JSON
    result = {"content": [{"type": "text", "text": original}]}
    bounded = bound_call_tool_result_dict(
        result, wire_policy(store, "64KB"), tool="t", wire_budget=16 * KB
    )
    (block,) = bounded.result["content"]
    assert json_bytes(block["text"]) <= 16 * KB
    reference = reference_of(original.encode())
    assert reference in block["text"]
    assert store.read_bytes(reference) == original.encode()


def test_a_wire_cut_of_an_already_cut_block_still_names_its_artifact() -> None:
    store = MemoryStore()
    original = "\x02" * 100_000
    result = {"content": [{"type": "text", "text": original}]}
    bounded = bound_call_tool_result_dict(
        result, wire_policy(store, "32KB"), tool="t", wire_budget=16 * KB
    )
    (block,) = bounded.result["content"]
    assert json_bytes(block["text"]) <= 16 * KB
    assert reference_of(original.encode()) in block["text"]
    assert bounded.artifacts == (reference_of(original.encode()),)


def test_the_tools_strategy_reaches_the_wire_cut() -> None:
    config = Config.from_mapping({"batch_ceiling": "unlimited", "tools": {
        "*": {"size_threshold": "64KB", "strategy": "head"}}})
    original = "".join(f"row {i:05d}\n" for i in range(3000))  # 30 KB: only the wire cuts
    result = {"content": [{"type": "text", "text": original}]}
    bounded = bound_call_tool_result_dict(
        result, Policy(config, sink=MemoryStore(), notices=False), tool="t",
        wire_budget=8 * KB)
    (block,) = bounded.result["content"]
    assert json_bytes(block["text"]) <= 8 * KB
    assert block["text"].startswith("row 00000\n")
    # A head, no tail, under the tool's own marker naming the original.
    assert block["text"].endswith(f"full output: {reference_of(original.encode())}. Narrow"
                                  " the query (a filter, a range, a search) to see the rest.]")

