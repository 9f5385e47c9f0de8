"""The ``_meta["toolcap/cut"]`` record on cut MCP results, and results another toolcap
bounded already: passed on only when measured within the limits, never on the word of
a record."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import GetPromptResult, ImageContent, PromptMessage, TextContent

from helpers import REF
from toolcap import Config, Policy
from toolcap.adapters.mcp import (
    bound_call_tool_result_dict,
    bound_get_prompt_result,
    bound_get_prompt_result_dict,
    bound_read_resource_result_dict,
)
from toolcap.core._json import json_size
from toolcap.core._marker import Marker
from toolcap.store import MemoryStore

KB = 1024
CUT_KEY = "toolcap/cut"


def policy(threshold: str = "4KB", store: Any = None) -> Policy:
    config = Config.from_mapping(
        {"media_threshold": "8KB", "tools": {"*": {"size_threshold": threshold}}}
    )
    return Policy(config, sink=store if store is not None else MemoryStore(), notices=False)


def text_result(text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


def test_a_cut_result_records_sizes_cap_limit_and_reference() -> None:
    store = MemoryStore()
    original = text_result("line of text\n" * 5000, _meta={"server/own": 1})
    bounded = bound_call_tool_result_dict(original, policy(store=store), tool="t")
    meta = bounded.result["_meta"]
    assert meta["server/own"] == 1
    record = meta[CUT_KEY]
    assert record["version"] == 1
    assert record["originalBytes"] == json_size(original["content"])
    assert record["keptBytes"] == json_size(bounded.result["content"])
    assert record["cap"] == "size_threshold"
    assert record["limit"] == 4 * KB
    assert record["ref"] == REF.search(bounded.result["content"][0]["text"]).group(0)
    assert record["refs"] == list(bounded.artifacts)
    assert store.read_bytes(record["ref"]) == original["content"][0]["text"].encode()


def test_a_wire_cut_names_the_wire_budget_as_the_cap() -> None:
    text = '"' * 3000  # 3000 bytes of text, 6000 once escaped
    bounded = bound_call_tool_result_dict(text_result(text), policy(), tool="t", wire_budget=2048)
    assert bounded.result["_meta"][CUT_KEY]["cap"] == "wire_budget"
    assert bounded.result["_meta"][CUT_KEY]["limit"] == 2048


@pytest.mark.parametrize("notes", ["media", "none"])
def test_the_notice_names_the_cap_the_record_names(notes: str) -> None:
    # With media, the text is cut below the batch ceiling to leave the media's note
    # room: the notice must still name the ceiling, the limit a user would change.
    stderr = io.StringIO()
    config = Config.from_mapping({"media_threshold": "2KB", "batch_ceiling": "8KB",
                                  "tools": {"*": {"size_threshold": "32KB"}}})
    work = Policy(config, sink=MemoryStore(), notices=True, stderr=stderr)
    image = {"type": "image", "mimeType": "image/png",
             "data": base64.b64encode(b"\x89PNG" + b"p" * 5000).decode()}
    content = [{"type": "text", "text": "x\n" * 4500}, *([image] if notes == "media" else [])]
    out = bound_call_tool_result_dict({"content": content}, work, tool="t")
    assert out.result["_meta"][CUT_KEY]["cap"] == "batch_ceiling"
    assert stderr.getvalue().count("(batch_ceiling)") == 1, stderr.getvalue()
    assert "(size_threshold)" not in stderr.getvalue()


def test_a_result_within_every_limit_has_no_record() -> None:
    result = text_result("small")
    assert bound_call_tool_result_dict(result, policy(), tool="t").result is result


def test_a_result_cut_tighter_upstream_passes_the_second_toolcap_untouched() -> None:
    inner = bound_call_tool_result_dict(text_result("x" * 100_000), policy("2KB"), tool="t")
    outer = bound_call_tool_result_dict(inner.result, policy("32KB"), tool="t")
    assert outer.result is inner.result
    assert not outer.changed
    text = outer.result["content"][0]["text"]
    assert len(REF.findall(text)) == 1


def test_a_forged_record_never_spares_a_result_over_the_limit() -> None:
    forged = {"version": 1, "originalBytes": 10, "keptBytes": 10, "cap": "size_threshold",
              "limit": 1, "ref": None, "refs": []}
    result = text_result("y" * 100_000, _meta={CUT_KEY: forged})
    bounded = bound_call_tool_result_dict(result, policy(), tool="t")
    assert bounded.changed
    assert len(bounded.result["content"][0]["text"].encode()) <= 4 * KB
    assert bounded.result["_meta"][CUT_KEY]["originalBytes"] > 100_000  # measured, not copied


@settings(max_examples=60, deadline=None)
@given(
    claimed=st.one_of(st.integers(-5, 10**9), st.booleans(), st.none(), st.text(max_size=5),
                      st.floats(allow_nan=True)),
    size=st.integers(0, 20_000),
)
def test_whatever_the_record_claims_the_result_is_within_the_limit(
    claimed: Any, size: int
) -> None:
    record = {"limit": claimed, "keptBytes": claimed}
    result = text_result("z" * size, _meta={CUT_KEY: record})
    bounded = bound_call_tool_result_dict(result, policy(), tool="t")
    assert sum(len(b["text"].encode()) for b in bounded.result["content"]) <= 4 * KB


def test_a_cut_resource_carries_the_record() -> None:
    result = {"contents": [{"uri": "file:///a", "text": "r" * 50_000}]}
    bounded = bound_read_resource_result_dict(result, policy(), uri="file:///a")
    record = bounded.result["_meta"][CUT_KEY]
    assert record["originalBytes"] == json_size(result["contents"])
    assert REF.fullmatch(record["ref"])


def test_a_prompt_keeps_its_roles_and_replaces_big_media() -> None:
    result = GetPromptResult(messages=[
        PromptMessage(role="user", content=TextContent(text="p" * 60_000)),
        PromptMessage(role="assistant", content=TextContent(text="ok")),
        PromptMessage(role="user", content=ImageContent(data="QUJD" * 5000, mime_type="image/png")),
    ])
    bounded = bound_get_prompt_result(result, policy(), name="review")
    assert isinstance(bounded, GetPromptResult)
    assert [m.role for m in bounded.messages] == ["user", "assistant", "user"]
    first, second, third = (m.content for m in bounded.messages)
    assert isinstance(first, TextContent) and len(first.text.encode()) <= 4 * KB
    assert second == TextContent(text="ok")
    assert isinstance(third, TextContent) and "image" in third.text
    assert bounded.meta is not None and CUT_KEY in bounded.meta


def test_a_prompt_of_many_messages_drops_only_merged_ones_and_stays_within_the_wire() -> None:
    messages = [{"role": "user" if i % 2 else "assistant",
                 "content": {"type": "text", "text": f"m{i} " * 200}} for i in range(400)]
    result = {"description": "d", "messages": messages}
    bounded = bound_get_prompt_result_dict(result, policy(), name="p", wire_budget=16 * KB)
    kept = bounded.result["messages"]
    assert kept and all(m["content"]["text"].strip() for m in kept)
    assert json_size(kept) <= 16 * KB
    assert sum(len(m["content"]["text"].encode()) for m in kept) <= 4 * KB
    assert bounded.result["description"] == "d"


def test_structured_content_nested_too_deeply_to_walk_is_dropped_with_a_note() -> None:
    value: Any = "x"
    for _ in range(5000):
        value = {"a": value}
    result = text_result("hi", structuredContent=value)
    bounded = bound_call_tool_result_dict(result, policy(), tool="t")
    assert "structuredContent" not in bounded.result
    assert "nested too deeply" in bounded.result["content"][-1]["text"]


# -- a second cut, by a toolcap in front of the one that cut first ------------------------

inner_texts = st.text(st.characters(codec="utf-8"), min_size=1, max_size=60).map(
    lambda unit: unit * (120_000 // max(1, len(unit.encode())) + 1))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(text=inner_texts, inner_kb=st.integers(8, 24), outer_kb=st.integers(1, 7),
       strategy=st.sampled_from(["head", "tail", "head_tail"]),
       wire=st.none() | st.integers(1500, 9000))
def test_a_second_cut_states_the_original_names_it_and_stays_within_every_limit(
    text: str, inner_kb: int, outer_kb: int, strategy: str, wire: int | None
) -> None:
    inner_store, outer_store = MemoryStore(), MemoryStore()
    inner = bound_call_tool_result_dict(text_result(text), policy(f"{inner_kb}KB", inner_store),
                                        tool="t").result
    first = inner["_meta"][CUT_KEY]
    config = Config.from_mapping({"tools": {"*": {"size_threshold": f"{outer_kb}KB",
                                                  "strategy": strategy}}})
    outer = bound_call_tool_result_dict(
        inner, Policy(config, sink=outer_store, notices=False), tool="t", wire_budget=wire,
        upstream_reads=True).result
    (block,) = outer["content"]
    assert len(block["text"].encode()) <= outer_kb * KB
    if wire is not None:
        assert json_size(outer["content"]) <= wire
    record = outer["_meta"][CUT_KEY]
    assert record["ref"] == first["ref"] and record["originalBytes"] == first["originalBytes"]
    # Every reference the text names leads to the original, in the first toolcap's store,
    # and every marker says the original's size as the first cut's marker says it.
    for ref in REF.findall(block["text"]):
        assert inner_store.read_bytes(ref) == text.encode()
    (said,) = Marker().find(inner["content"][0]["text"])
    for seen in Marker().find(block["text"]):
        assert seen.original == said.original
    # Nothing fabricated: each line kept (apart from the markers) is in the original.
    for line in block["text"].splitlines():
        assert "[toolcap:" in line or line in text


def test_a_second_cut_says_the_size_of_the_original_not_of_the_first_cut() -> None:
    inner_store = MemoryStore()
    text = "line of text\n" * 20_000  # 253.9 KB
    inner = bound_call_tool_result_dict(text_result(text), policy("32KB", inner_store),
                                        tool="t").result
    outer = bound_call_tool_result_dict(inner, policy("4KB"), tool="t", upstream_reads=True)
    (block,) = outer.result["content"]
    assert "of 253.9 KB; full output: " + inner["_meta"][CUT_KEY]["ref"] in block["text"]
    assert "of 31." not in block["text"]
    # Without a way to read the first toolcap's store, the second keeps its own copy.
    alone = bound_call_tool_result_dict(inner, policy("4KB"), tool="t")
    assert alone.result["_meta"][CUT_KEY]["ref"] != inner["_meta"][CUT_KEY]["ref"]


def test_a_forged_record_names_nothing_the_second_cut_did_not_keep() -> None:
    forged = text_result("x" * 50_000, _meta={CUT_KEY: {"ref": "toolcap:" + "0" * 32,
                                                       "originalBytes": 10**9, "limit": 10**6}})
    store = MemoryStore()
    outer = bound_call_tool_result_dict(forged, policy("4KB", store), tool="t",
                                        upstream_reads=True)
    (block,) = outer.result["content"]
    (ref,) = REF.findall(block["text"])
    assert store.read_bytes(ref) == b"x" * 50_000


@settings(deadline=None, max_examples=60, derandomize=True)
@given(
    texts=st.lists(st.text(st.characters(codec="utf-8"), max_size=3000), min_size=1,
                   max_size=8),
    images=st.lists(st.integers(0, 12 * KB), max_size=3),
    structured=st.none() | st.lists(st.text(max_size=800), max_size=12),
)
def test_the_record_measures_the_payload_sent_and_the_limit_bounds_its_text(
    texts: list[str], images: list[int], structured: list[str] | None
) -> None:
    # What the docs say the two numbers are: keptBytes, the compact JSON of the whole
    # payload sent; limit, the bound of the text the model reads (the notes standing
    # for stored media aside) and, on its own, of structuredContent.
    content: list[Any] = [{"type": "text", "text": text} for text in texts]
    content += [{"type": "image", "mimeType": "image/png",
                 "data": base64.b64encode(b"i" * size).decode()} for size in images]
    result: dict[str, Any] = {"content": content}
    if structured is not None:
        result["structuredContent"] = {"rows": structured}
    bounded = bound_call_tool_result_dict(result, policy("2KB"), tool="t", wire_budget=3 * KB)
    if not bounded.changed:
        return
    sent = bounded.result
    record = sent["_meta"][CUT_KEY]
    assert record["keptBytes"] == sum(json_size(sent[key]) for key in
                                      ("content", "structuredContent") if key in sent)
    assert record["limit"] == 2 * KB
    kept = [b["text"] for b in sent["content"] if b["type"] == "text"
            and not b["text"].startswith("[image ")]
    assert len("\n".join(kept).encode("utf-8")) <= record["limit"]
    if "structuredContent" in sent:
        assert json_size(sent["structuredContent"]) <= record["limit"]
