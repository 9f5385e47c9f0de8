"""Properties of the MCP result bounding, over all of Unicode and many block shapes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from _strategies import large_text, limits
from toolcap import Config, Policy
from toolcap.adapters.mcp import bound_call_tool_result_dict
from toolcap.core._json import json_size
from toolcap.store import MemoryStore

KB = 1024

blocks = st.lists(
    st.one_of(
        large_text(max_bytes=30_000).map(lambda text: {"type": "text", "text": text}),
        st.just({"type": "resource_link", "uri": "file:///x", "name": "x"}),
    ),
    min_size=1,
    max_size=6,
)


def policy(threshold: int) -> Policy:
    config = Config.from_mapping(
        {"batch_ceiling": "unlimited", "tools": {"*": {"size_threshold": threshold}}}
    )
    return Policy(config, sink=MemoryStore(), notices=False)


def utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@settings(deadline=None, derandomize=True, max_examples=60)
@given(content=blocks, threshold=limits)
def test_blocks_keep_number_order_and_kind_and_the_text_fits(
    content: list[dict[str, Any]], threshold: int
) -> None:
    result = {"content": content}
    bounded = bound_call_tool_result_dict(result, policy(threshold), tool="t")
    out = bounded.result["content"]
    assert [block["type"] for block in out] == [block["type"] for block in content]
    for before, after in zip(content, out, strict=True):
        if before["type"] != "text":
            assert after == before
    total = sum(utf8(block["text"]) for block in content if block["type"] == "text")
    if total <= threshold:
        assert not bounded.changed and bounded.result is result
        return
    texts = [block["text"] for block in out if block["type"] == "text"]
    assert sum(len(text.encode("utf-8")) for text in texts) <= threshold


@settings(deadline=None, derandomize=True, max_examples=60)
@given(content=blocks, budget=st.integers(min_value=2 * KB, max_value=16 * KB))
def test_the_json_of_the_text_blocks_fits_the_wire_budget(
    content: list[dict[str, Any]], budget: int
) -> None:
    config = Config.from_mapping(
        {"batch_ceiling": "unlimited", "tools": {"*": {"size_threshold": "unlimited"}}}
    )
    pol = Policy(config, sink=MemoryStore(), notices=False)
    bounded = bound_call_tool_result_dict({"content": content}, pol, tool="t", wire_budget=budget)
    text_blocks = [block for block in bounded.result["content"] if block["type"] == "text"]
    assert json_size(text_blocks) <= budget
