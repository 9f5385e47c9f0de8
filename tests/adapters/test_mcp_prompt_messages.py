"""A prompt of many messages is cut by whole messages: every kept message keeps its
role, its order and its content; one marker message stands for those left out, which
are stored; the messages sent fit the limit as compact JSON."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp_types import _v2025_11_25, _v2026_07_28

from helpers import REF
from toolcap import Config, Policy
from toolcap.adapters.mcp import bound_get_prompt_result_dict
from toolcap.core._json import json_size
from toolcap.store import MemoryStore

KB = 1024
WIRE = 64 * KB
CUT_KEY = "toolcap/cut"
LEFT_OUT = re.compile(r"\[toolcap: messages (\d+) to (\d+) of (\d+) of this prompt are left out")


def policy(store: MemoryStore, threshold: str = "32KB", **extra: Any) -> Policy:
    config = Config.from_mapping({"tools": {"*": {"size_threshold": threshold}}, **extra})
    return Policy(config, sink=store, notices=False)


def text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": {"type": "text", "text": text}}


def alternating(count: int, size: int) -> list[dict[str, Any]]:
    return [text_message("user" if i % 2 == 0 else "assistant", f"m{i:05d} ".ljust(size, "x"))
            for i in range(count)]


def image_message(role: str, raw: bytes) -> dict[str, Any]:
    data = base64.b64encode(raw).decode()
    return {"role": role, "content": {"type": "image", "data": data, "mimeType": "image/png"}}


def split(sent: list[Any]) -> tuple[list[Any], dict[str, Any] | None, list[Any]]:
    """The head, the marker message (or None) and the tail of the messages sent."""
    at = [i for i, m in enumerate(sent) if LEFT_OUT.search(m["content"].get("text", ""))]
    assert len(at) <= 1, "one marker message at most"
    if not at:
        return sent, None, []
    return sent[: at[0]], sent[at[0]], sent[at[0] + 1:]


def assert_whole_messages_around_one_marker(original: list[Any], sent: list[Any]) -> None:
    head, marker, tail = split(sent)
    assert marker is not None
    first, last, total = (int(x) for x in LEFT_OUT.search(marker["content"]["text"]).groups())
    assert total == len(original)
    assert head == original[: first - 1]
    assert tail == (original[last:] if last < len(original) else [])
    assert marker["role"] == original[first - 1]["role"]


def assert_valid_in_every_revision(result: dict[str, Any]) -> None:
    for revision in (_v2025_11_25, _v2026_07_28):
        for message in result["messages"]:
            revision.PromptMessage.model_validate(message)


@pytest.mark.parametrize(("count", "size"), [(2000, 100), (5000, 10), (20000, 1)])
def test_thousands_of_small_messages_keep_their_roles_and_order(count: int, size: int) -> None:
    store = MemoryStore()
    original = alternating(count, size)
    bounded = bound_get_prompt_result_dict({"messages": original}, policy(store), name="p",
                                           wire_budget=WIRE)
    sent = bounded.result["messages"]
    assert len(sent) > 100
    assert_whole_messages_around_one_marker(original, sent)
    assert json_size(sent) <= 32 * KB
    record = bounded.result["_meta"][CUT_KEY]
    assert record["keptBytes"] <= record["limit"] == 32 * KB
    # What is left out is stored: every message's text, joined by line breaks.
    ref = REF.search(split(sent)[1]["content"]["text"]).group(0)
    assert record["ref"] == ref
    assert store.read_bytes(ref).decode() == "\n".join(m["content"]["text"] for m in original)
    assert_valid_in_every_revision(bounded.result)


def test_assistant_turns_stay_assistant_turns() -> None:
    original = alternating(3000, 40)
    bounded = bound_get_prompt_result_dict({"messages": original}, policy(MemoryStore()),
                                           name="p", wire_budget=WIRE)
    head, _, tail = split(bounded.result["messages"])
    for message in head + tail:
        number = int(message["content"]["text"][1:6])
        assert message["role"] == ("user" if number % 2 == 0 else "assistant")


def test_one_giant_message_among_small_ones_is_left_out_and_stored() -> None:
    store = MemoryStore()
    original = alternating(3000, 20)
    original[1500] = text_message("assistant", "giant " * 200_000)
    bounded = bound_get_prompt_result_dict({"messages": original}, policy(store), name="p",
                                           wire_budget=WIRE)
    sent = bounded.result["messages"]
    assert_whole_messages_around_one_marker(original, sent)
    assert all("giant" not in m["content"]["text"] or LEFT_OUT.search(m["content"]["text"])
               for m in sent)
    assert json_size(sent) <= 32 * KB
    assert b"giant giant" in store.read_bytes(bounded.result["_meta"][CUT_KEY]["ref"])


def test_images_and_resources_among_the_messages_are_kept_whole_or_stored() -> None:
    store = MemoryStore()
    original: list[Any] = alternating(2000, 30)
    small = image_message("user", b"small-png" * 10)
    original[3] = small
    original[1000] = image_message("assistant", b"left-out-png" * 50)
    original[1997] = {"role": "user", "content": {"type": "resource", "resource": {
        "uri": "file:///notes.txt", "mimeType": "text/plain", "text": "resource text"}}}
    big = image_message("user", b"big-png" * 20_000)  # over the media threshold
    original[1] = big
    bounded = bound_get_prompt_result_dict(
        {"messages": original}, policy(store, media_threshold="64KB"), name="p",
        wire_budget=WIRE)
    sent = bounded.result["messages"]
    assert sent[3] == small
    assert sent[-3] == original[1997]
    assert sent[1]["role"] == "assistant" or sent[1]["role"] == original[1]["role"]
    assert sent[1]["content"]["type"] == "text" and "image" in sent[1]["content"]["text"]
    refs = bounded.result["_meta"][CUT_KEY]["refs"]
    stored = {store.read_bytes(ref) for ref in refs}
    assert b"big-png" * 20_000 in stored
    assert b"left-out-png" * 50 in stored
    assert json_size(sent) <= 32 * KB
    assert_valid_in_every_revision(bounded.result)


def test_a_limit_smaller_than_one_message_sends_only_the_marker_message() -> None:
    store = MemoryStore()
    original = alternating(1000, 3 * KB)
    bounded = bound_get_prompt_result_dict({"messages": original}, policy(store, "1KB"),
                                           name="p", wire_budget=WIRE)
    sent = bounded.result["messages"]
    assert len(sent) == 1 and sent[0]["role"] == "user"
    assert LEFT_OUT.search(sent[0]["content"]["text"]).groups() == ("1", "1000", "1000")
    assert json_size(sent) <= KB
    assert store.read_bytes(REF.search(sent[0]["content"]["text"]).group(0))
    assert_valid_in_every_revision(bounded.result)


def test_a_few_messages_are_still_cut_within_their_text() -> None:
    original = [text_message("user", "a line of text\n" * 10_000), text_message("assistant", "ok")]
    bounded = bound_get_prompt_result_dict({"messages": original}, policy(MemoryStore()),
                                           name="p", wire_budget=WIRE)
    sent = bounded.result["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant"]
    assert sent[0]["content"]["text"].startswith("a line of text")
    assert sent[1] == original[1]


ROLES = st.sampled_from(["user", "assistant"])
TEXT = st.text(st.characters(codec="utf-8"), max_size=300)
MESSAGE = st.one_of(
    st.builds(text_message, ROLES, TEXT),
    st.builds(image_message, ROLES, st.binary(max_size=200)),
)


@settings(deadline=None, max_examples=60, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    messages=st.lists(MESSAGE, min_size=1, max_size=40).flatmap(
        lambda unit: st.integers(1, 150).map(lambda times: unit * times)),
    threshold=st.sampled_from(["1KB", "2KB", "8KB"]),
    wire=st.sampled_from([None, 4 * KB, 16 * KB]),
)
def test_a_cut_prompt_keeps_roles_and_order_and_fabricates_nothing(
    messages: list[dict[str, Any]], threshold: str, wire: int | None
) -> None:
    bounded = bound_get_prompt_result_dict({"messages": messages}, policy(MemoryStore(),
                                           threshold), name="p", wire_budget=wire)
    sent = bounded.result["messages"]
    for message in sent:
        text = message["content"].get("text")
        if text is not None:
            text.encode("utf-8")  # valid UTF-8: no lone surrogate
    marker = split(sent)[1]
    event("whole messages" if marker is not None else "cut within texts")
    if marker is not None:
        assert_whole_messages_around_one_marker(messages, sent)
        record = bounded.result["_meta"][CUT_KEY]
        assert json_size(sent) == record["keptBytes"] <= record["limit"]
    else:
        # Cut within texts: the same messages, in order, with their roles.
        assert [m["role"] for m in sent] == [m["role"] for m in messages]
        texts = [m["content"]["text"] for m in sent if m["content"]["type"] == "text"]
        assert sum(len(t.encode()) for t in texts) <= int(threshold[0]) * KB
        for before, after in zip(messages, sent, strict=True):
            if after != before:
                assert after["content"]["type"] == "text"
                assert "[toolcap:" in after["content"]["text"]
    assert_valid_in_every_revision(bounded.result)
