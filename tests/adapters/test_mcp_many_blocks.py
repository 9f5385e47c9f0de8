"""An MCP result of many blocks stays readable: stored once, named by its marker."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers import REF, reference_of
from toolcap import Config, Policy
from toolcap.adapters.mcp import bound_call_tool_result_dict, bound_read_resource_result_dict
from toolcap.core._json import dumps, json_size
from toolcap.store import MemoryStore

KB = 1024
WIRE = 64 * KB


def policy(store: MemoryStore, **settings_: Any) -> Policy:
    return Policy(Config.from_mapping(settings_), sink=store, notices=False)


def blocks_of(texts: list[str]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text} for text in texts]}


def named(bounded: Any) -> list[str]:
    """Every full reference the result's text shows."""
    return sorted({ref for block in bounded.result["content"] for ref in REF.findall(
        block.get("text", ""))})


def test_4000_small_blocks_under_the_threshold_are_stored_once_and_named() -> None:
    # 26 KB of text: under the 32 KB threshold, but 4,000 blocks' JSON is over 64 KB.
    texts = [f"row {i:04d}" for i in range(4000)]
    store = MemoryStore()
    bounded = bound_call_tool_result_dict(blocks_of(texts), policy(store), tool="t",
                                          wire_budget=WIRE)
    whole = "\n".join(texts).encode()
    assert [info.ref for info in store.list_artifacts()] == [reference_of(whole)]
    assert bounded.artifacts == (reference_of(whole),)
    assert store.read_bytes(reference_of(whole)) == whole
    assert json_size(bounded.result["content"]) <= WIRE
    # What fits is still there to read, from the first row on.
    assert bounded.result["content"][0]["text"].startswith("row 0000\nrow 0001\n")


def test_10000_blocks_over_the_threshold_are_stored_once_and_named() -> None:
    texts = [f"line {i:05d} of the listing" for i in range(10_000)]
    store = MemoryStore()
    start = time.perf_counter()
    bounded = bound_call_tool_result_dict(blocks_of(texts), policy(store), tool="t",
                                          wire_budget=WIRE)
    elapsed = time.perf_counter() - start
    whole = "\n".join(texts).encode()
    assert [info.ref for info in store.list_artifacts()] == [reference_of(whole)]
    assert named(bounded) == [reference_of(whole)]
    assert bounded.artifacts == (reference_of(whole),)
    delivered = "\n".join(block["text"] for block in bounded.result["content"])
    assert len(delivered.encode()) <= 32 * KB
    assert json_size(bounded.result["content"]) <= WIRE
    assert delivered.startswith("line 00000 of the listing\n")
    print(f"\n10,000 blocks bounded in {elapsed:.2f} s")


def test_blocks_cut_only_by_the_wire_share_one_artifact_named_in_each_cut() -> None:
    # 3 x 20 KB of control characters: 60 KB of text, 360 KB of JSON.
    texts = [chr(1 + i) * 20_000 for i in range(3)]
    store = MemoryStore()
    bounded = bound_call_tool_result_dict(
        blocks_of(texts), policy(store, batch_ceiling="unlimited",
                                 tools={"*": {"size_threshold": "64KB"}}),
        tool="t", wire_budget=16 * KB)
    whole = "\n".join(texts).encode()
    assert [info.ref for info in store.list_artifacts()] == [reference_of(whole)]
    assert bounded.artifacts == (reference_of(whole),)
    assert len(bounded.result["content"]) == 3
    for block in bounded.result["content"]:
        assert reference_of(whole) in block["text"]
    assert json_size(bounded.result["content"]) <= 16 * KB


def test_blocks_cut_by_their_threshold_are_stored_once_and_each_marker_names_it() -> None:
    texts = ["a" * 100_000, "b" * 100_000]
    store = MemoryStore()
    bounded = bound_call_tool_result_dict(blocks_of(texts), policy(store), tool="t")
    whole = "\n".join(texts).encode()
    assert [info.ref for info in store.list_artifacts()] == [reference_of(whole)]
    assert bounded.artifacts == (reference_of(whole),)
    first, second = (block["text"] for block in bounded.result["content"])
    assert first.startswith("a") and second.startswith("b")
    assert named(bounded) == [reference_of(whole)]


def test_a_single_block_is_stored_as_it_was_sent() -> None:
    store = MemoryStore()
    text = "z" * 100_000
    bounded = bound_call_tool_result_dict(blocks_of([text]), policy(store), tool="t",
                                          wire_budget=WIRE)
    assert bounded.artifacts == (reference_of(text.encode()),)
    assert [info.ref for info in store.list_artifacts()] == [reference_of(text.encode())]


def test_many_resource_contents_are_stored_once_and_named() -> None:
    contents = [{"uri": f"file:///{i}", "text": f"entry {i}"} for i in range(5000)]
    store = MemoryStore()
    bounded = bound_read_resource_result_dict({"contents": contents}, policy(store),
                                         uri="file:///", wire_budget=WIRE)
    whole = "\n".join(entry["text"] for entry in contents).encode()
    assert [info.ref for info in store.list_artifacts()] == [reference_of(whole)]
    assert bounded.artifacts == (reference_of(whole),)
    assert json_size(bounded.result["contents"]) <= WIRE


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=400),
    wire=st.integers(2 * KB, 24 * KB),
    threshold=st.integers(1, 40),
)
# Quotes escape to twice their size: a refit that scaled the limit down by the bytes
# over cut below the marker's size and sent a bare "[toolcap: truncated]".
@example(sizes=[1843], wire=2048, threshold=2)
def test_any_blocks_fit_the_wire_and_name_one_artifact_holding_them_all(
    sizes: list[int], wire: int, threshold: int
) -> None:
    texts = [f"{i}:" + '"' * size for i, size in enumerate(sizes)]
    store = MemoryStore()
    bounded = bound_call_tool_result_dict(
        blocks_of(texts), policy(store, tools={"*": {"size_threshold": f"{threshold}KB"}}),
        tool="t", wire_budget=wire)
    content = bounded.result["content"]
    assert len(dumps(content).encode()) <= wire
    delivered = "\n".join(block["text"] for block in content)
    whole = "\n".join(texts).encode()
    refs = [info.ref for info in store.list_artifacts()]
    if delivered.encode() == whole:  # nothing lost (at most, blocks joined): nothing kept
        assert refs == [] and bounded.artifacts == ()
    else:
        assert refs == [reference_of(whole)]
        assert bounded.artifacts == (reference_of(whole),)
        assert named(bounded) == [reference_of(whole)]


def test_a_wire_cut_never_makes_the_text_longer() -> None:
    texts = ["0:", "1:" + '"' * 996]  # 1,001 bytes of text, under a 1 KB threshold
    bounded = bound_call_tool_result_dict(
        blocks_of(texts), policy(MemoryStore(), tools={"*": {"size_threshold": "1KB"}}),
        tool="t", wire_budget=2 * KB)
    delivered = "\n".join(block["text"] for block in bounded.result["content"])
    assert len(delivered.encode()) <= 1 * KB


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(counts=st.lists(st.integers(0, 3000), min_size=2, max_size=6),
       wire=st.integers(4 * KB, 48 * KB), indent=st.sampled_from([None, 2]))
def test_blocks_that_hold_json_documents_stay_documents_under_a_wire_cut(
    counts: list[int], wire: int, indent: int | None
) -> None:
    import json

    documents = [json.dumps({"block": i, "rows": [{"id": n, "name": f'row "{n}"\t'}
                                                  for n in range(count)]}, indent=indent)
                 for i, count in enumerate(counts)]
    texts = [*documents, "a plain line of text\n" * 50]
    bounded = bound_call_tool_result_dict(
        blocks_of(texts), policy(MemoryStore(), batch_ceiling="unlimited",
                                 tools={"*": {"size_threshold": "unlimited"}}),
        tool="t", wire_budget=wire)
    content = bounded.result["content"]
    assert json_size(content) <= wire
    assert len(content) == len(texts)
    for block, original in zip(content, texts, strict=True):
        assert block["text"].strip(), "an empty text block"
        if original.startswith("{"):
            parsed = json.loads(block["text"])  # still a document
            assert parsed["block"] == json.loads(original)["block"]
