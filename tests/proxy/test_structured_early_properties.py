"""A big structuredContent stored on a thread while the text is cut: the same output,
the same artifacts and references as storing it after the text."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _strategies import json_documents, tricky_character
from toolcap import Config, Policy, StoreError
from toolcap.adapters import _mcpstructured, mcp
from toolcap.adapters.mcp import bound_call_tool_result_dict
from toolcap.core._jsonraw import RawStrings
from toolcap.proxy._scan import scan_message
from toolcap.store import MemoryStore

LONG = 20  # the scanner keeps the bytes of every string this long (see test_scan_properties)

text = st.text(alphabet=tricky_character, min_size=0, max_size=1500)
astral = st.text(alphabet=st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
                 max_size=40)
long_text = st.builds(lambda a, b, c: a + b + c, text, astral, text)


class FailingStore(MemoryStore):
    """A store that refuses what ``refuse`` picks (a full disk for those puts)."""

    def __init__(self, refuse: str) -> None:
        super().__init__()
        self.refuse = refuse

    def put(self, data: Any, *, tool: str | None = None) -> str:
        raw = bytes(data)
        if self.refuse == "all" or (self.refuse == "structured" and raw.startswith(b"{")):
            raise StoreError("no space left on the device")
        return super().put(data, tool=tool)


@st.composite
def results(draw: st.DrawFn) -> dict[str, Any]:
    texts = draw(st.lists(long_text, min_size=1, max_size=3))
    content: list[Any] = [{"type": "text", "text": t} for t in texts]
    if draw(st.booleans()):
        content.append({"type": "resource_link", "uri": "file:///x", "name": "x"})
    repeat = draw(st.sampled_from(["again", "other", "document"]))
    structured: Any
    if repeat == "again":  # the text again, as the Python SDK sends a tool's string
        structured = {"result": texts[0]}
    elif repeat == "other":
        structured = {"result": draw(long_text), "more": draw(json_documents)}
    else:
        structured = {"items": [draw(long_text) for _ in range(draw(st.integers(1, 4)))]}
    result: dict[str, Any] = {"content": content, "structuredContent": structured}
    if draw(st.booleans()):
        result["isError"] = draw(st.booleans())
    return result


def bound(result: dict[str, Any], threshold: int, store: MemoryStore, *, early: bool,
          monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``result`` read as the proxy reads a big line and bounded, storing early or not."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8", "surrogatepass")
    raw = RawStrings()
    message = scan_message(line, long_string=LONG, steps=10**9, raw=raw)
    if message is None:  # a lone surrogate: not UTF-8, the slow path's (no raw bytes)
        message = json.loads(line.decode("utf-8", "replace"))
    config = Config.from_mapping({"batch_ceiling": "unlimited",
                                  "tools": {"*": {"size_threshold": threshold}}})
    policy = Policy(config, sink=store, notices=False)
    with monkeypatch.context() as patch:
        if early:
            patch.setattr(_mcpstructured, "EARLY_MIN", 0)  # every size takes the thread
        else:
            patch.setattr(mcp, "store_early", lambda work, structured: None)
        with _mcpstructured.raw_strings(raw if raw else None):
            out = bound_call_tool_result_dict(message["result"], policy, tool="t", call_id="1")
    return {"result": out.result, "changed": out.changed, "artifacts": out.artifacts}


@settings(max_examples=150, deadline=None)
@given(results(), st.integers(min_value=1024, max_value=4096),
       st.sampled_from(["none", "none", "structured", "all"]))
def test_storing_structured_content_on_a_thread_changes_nothing_sent_or_stored(
    result: dict[str, Any], threshold: int, refuse: str
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        slow_store, fast_store = FailingStore(refuse), FailingStore(refuse)
        slow = bound(result, threshold, slow_store, early=False, monkeypatch=monkeypatch)
        fast = bound(result, threshold, fast_store, early=True, monkeypatch=monkeypatch)
    assert fast == slow
    assert fast_store.data == slow_store.data  # the same artifacts, byte for byte
    for reference in fast["artifacts"]:  # and every reference sent is readable
        assert fast_store.read_bytes(reference)


def test_the_structured_original_is_stored_on_another_thread_while_the_text_is_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "line of output\n" * 400
    store = MemoryStore()
    threads: list[tuple[str, bytes]] = []
    real_put = store.put

    def put(data: Any, *, tool: str | None = None) -> str:
        threads.append((threading.current_thread().name, bytes(data)[:1]))
        return real_put(data, tool=tool)

    monkeypatch.setattr(store, "put", put)
    out = bound({"content": [{"type": "text", "text": text}],
                 "structuredContent": {"result": text}}, 1024, store, early=True,
                monkeypatch=monkeypatch)
    assert out["changed"] and len(out["artifacts"]) == 2
    by_kind = {first: name for name, first in threads}
    assert by_kind[b"{"] == "toolcap-store-structured"  # the JSON original
    assert by_kind[b"l"] == threading.current_thread().name  # the text, as before
    # Recorded in the same order as before: the text's original, then the JSON one.
    assert store.read_bytes(out["artifacts"][0]) == text.encode()
    assert json.loads(store.read_bytes(out["artifacts"][1])) == {"result": text}


def test_a_small_structured_content_is_stored_after_the_text_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "line of output\n" * 400  # its JSON is far under EARLY_MIN
    store = MemoryStore()
    names: list[str] = []
    real_put = store.put

    def put(data: Any, *, tool: str | None = None) -> str:
        names.append(threading.current_thread().name)
        return real_put(data, tool=tool)

    monkeypatch.setattr(store, "put", put)
    line = json.dumps({"content": [{"type": "text", "text": text}],
                       "structuredContent": {"result": text}}).encode()
    raw = RawStrings()
    message = scan_message(line, long_string=LONG, raw=raw)
    config = Config.from_mapping({"tools": {"*": {"size_threshold": 1024}}})
    with _mcpstructured.raw_strings(raw):
        out = bound_call_tool_result_dict(message, Policy(config, sink=store, notices=False),
                                          tool="t")
    assert len(out.artifacts) == 2
    assert names == [threading.current_thread().name] * 2
