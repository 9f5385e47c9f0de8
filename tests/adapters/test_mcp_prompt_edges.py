"""Edges of a prompt cut by whole messages: a marker message too long for the limit
takes a shorter form (down to the short marker, then nothing), never over the limit;
content that is not text left out with the messages is named, and links are kept."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import REF
from toolcap import Config, Policy
from toolcap.adapters.mcp import bound_get_prompt_result_dict
from toolcap.core._json import json_size
from toolcap.core._marker import SHORT_MARKER
from toolcap.store import MemoryStore

KB = 1024
LEFT_OUT = re.compile(r"\[toolcap: messages (\d+) to (\d+) of (\d+) of this prompt are left out")


def policy(store: MemoryStore, threshold: str = "1KB", **tool: Any) -> Policy:
    config = Config.from_mapping({"tools": {"*": {"size_threshold": threshold, **tool}}})
    return Policy(config, sink=store, notices=False)


def turns(count: int, size: int = 20) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": {"type": "text", "text": f"m{i:05d} ".ljust(size, "x")}}
            for i in range(count)]


def marker_text(sent: list[dict[str, Any]]) -> str:
    (text,) = [m["content"]["text"] for m in sent if "[toolcap:" in m["content"].get("text", "")]
    return text


# A marker of 200 bytes rendered (the most allowed) whose JSON is 780 bytes, beside
# content of every kind left out: with a 1 KB limit (the least the configuration
# allows) the smallest real case where the full marker message cannot fit.
ESCAPED_MARKER = "\x01" * 116 + "[kept {kept} of {original}{where}]"
EVERY_KIND = [{"type": "resource_link", "uri": "file:///a", "name": "a"},
              {"type": "image", "data": "aW1n", "mimeType": "image/png"},
              {"type": "audio", "data": "aW1n", "mimeType": "audio/wav"},
              {"type": "resource", "resource": {"uri": "file:///b", "blob": "aW1n"}},
              {"type": "future_kind"}]


def test_a_marker_message_over_the_limit_takes_the_short_line_naming_the_artifact() -> None:
    store = MemoryStore()
    messages = turns(400)
    for at, content in enumerate(EVERY_KIND, start=200):
        messages[at] = {"role": "user", "content": content}
    bounded = bound_get_prompt_result_dict({"messages": messages},
                                           policy(store, marker=ESCAPED_MARKER), name="p")
    sent = bounded.result["messages"]
    assert json_size(sent) <= KB
    text = marker_text(sent)
    assert "\x01" not in text and LEFT_OUT.match(text)
    assert "with 1 image, 1 audio, 1 resource, 1 resource_link, 1 other content" in text
    full = REF.findall(text)[-1]
    assert store.read_bytes(full).decode().splitlines()[5] == messages[5]["content"]["text"]


SHORT = json_size([{"role": "user", "content": {"type": "text", "text": SHORT_MARKER}}])


@pytest.mark.parametrize(("wire", "marker"), [(150, True), (SHORT, True), (SHORT - 1, False)])
def test_a_limit_too_small_for_the_line_sends_the_short_marker_then_nothing(
    wire: int, marker: bool
) -> None:
    # A wire budget passed to the library is not held to the configuration's 1 KB.
    bounded = bound_get_prompt_result_dict({"messages": turns(400)}, policy(MemoryStore()),
                                           name="p", wire_budget=wire)
    sent = bounded.result["messages"]
    assert json_size(sent) <= wire
    texts = [m["content"]["text"] for m in sent]
    assert (SHORT_MARKER in texts) is marker and (texts == []) is not marker
    assert bounded.result["_meta"]["toolcap/cut"]["limit"] == wire


def test_content_left_out_that_is_not_text_is_named_and_links_are_kept() -> None:
    store = MemoryStore()
    messages = turns(400)
    link = {"type": "resource_link", "uri": "file:///spec.md", "name": "spec"}
    image = {"type": "image", "data": "aW1n", "mimeType": "image/png"}
    messages[200] = {"role": "user", "content": link}
    messages[201] = {"role": "assistant", "content": image}
    messages[202] = {"role": "user", "content": {"type": "future_kind", "x": 1}}
    bounded = bound_get_prompt_result_dict({"messages": messages}, policy(store), name="p")
    sent = bounded.result["messages"]
    assert json_size(sent) <= KB
    text = marker_text(sent)
    assert "with 1 image, 1 resource_link, 1 other content" in text
    links = [ref for ref in REF.findall(text) if b"spec.md" in store.read_bytes(ref)]
    assert len(links) == 1
    kept = json.loads(store.read_bytes(links[0]))
    assert kept == [{"message": 201, "content": link},
                    {"message": 203, "content": {"type": "future_kind", "x": 1}}]
    assert links[0] in bounded.result["_meta"]["toolcap/cut"]["refs"]


@settings(deadline=None, max_examples=60, derandomize=True)
@given(count=st.integers(50, 600), size=st.integers(1, 60),
       wire=st.none() | st.integers(2, 3 * KB),  # 2: the empty list's brackets
       marker=st.sampled_from([None, ESCAPED_MARKER, '"' * 100 + "{kept}{where}"]),
       links=st.lists(st.integers(0, 599), max_size=5))
def test_a_prompt_cut_by_whole_messages_is_never_over_its_limit(
    count: int, size: int, wire: int | None, marker: str | None, links: list[int]
) -> None:
    messages = turns(count, size)
    for at in links:
        if at < count:
            messages[at] = {"role": "user", "content": {"type": "resource_link",
                                                        "uri": f"file:///{at}", "name": "n"}}
    extra = {"marker": marker} if marker is not None else {}
    given_policy = policy(MemoryStore(), **extra)
    bounded = bound_get_prompt_result_dict({"messages": messages}, given_policy, name="p",
                                           wire_budget=wire)
    limit = KB if wire is None else min(KB, wire)
    if bounded.changed:
        assert json_size(bounded.result["messages"]) <= limit
