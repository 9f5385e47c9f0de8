"""The limit bounds all the text a bounded MCP result carries to the model: its text
blocks (embedded texts too), the notes standing for stored media, the note about a cut
or withheld ``structuredContent``, and the marker, together.

Measured as the seam measures a response: the texts in order, joined by line breaks,
in UTF-8 bytes. Checked on generated tool results, resources and prompts: always
within the least of ``size_threshold``, ``batch_ceiling`` and ``wire_budget``, always
valid UTF-8, and every line kept outside a marker or a note is in the original.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from _strategies import large_text, tricky_character
from toolcap import Config, Policy
from toolcap.adapters.mcp import (
    bound_call_tool_result_dict,
    bound_get_prompt_result_dict,
    bound_read_resource_result_dict,
    result_limit,
)
from toolcap.core._json import json_size
from toolcap.core._utf8 import sanitize
from toolcap.store import MemoryStore

KB = 1024
MEDIA_THRESHOLD = 2 * KB
# A note standing for a medium, or for structuredContent, as toolcap writes them.
NOTE = re.compile(r"\[(image|audio|embedded resource|resource|structuredContent)\b.* not sent: "
                  r"|\[toolcap: structuredContent |\[toolcap: \d+ more media ", re.DOTALL)

texts = st.one_of(large_text(max_bytes=9000), st.text(alphabet=tricky_character, max_size=80))
uris = st.text(alphabet=tricky_character, max_size=40).map(lambda tail: "file:///" + tail)


def payload(size: int) -> str:
    return base64.b64encode(b"\x89PNG" + b"p" * size).decode()


@st.composite
def blocks(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "text", "text", "image", "audio", "resource_text",
                                 "resource_blob", "resource_link"]))
    if kind == "text":
        return {"type": "text", "text": draw(texts)}
    if kind in ("image", "audio"):
        mime = "image/png" if kind == "image" else "audio/wav"
        size = draw(st.integers(0, 3 * MEDIA_THRESHOLD))
        return {"type": kind, "data": payload(size), "mimeType": mime}
    if kind == "resource_link":
        return {"type": "resource_link", "uri": draw(uris), "name": "r"}
    return {"type": "resource", "resource": draw(resources(kind == "resource_text"))}


@st.composite
def resources(draw: st.DrawFn, text: bool | None = None) -> dict[str, Any]:
    """A resource's contents: a text, or a blob (either when ``text`` is None)."""
    if text is None:
        text = draw(st.booleans())
    if text:
        return {"uri": draw(uris), "mimeType": "text/plain", "text": draw(texts)}
    return {"uri": draw(uris), "mimeType": "application/octet-stream",
            "blob": payload(draw(st.integers(0, 3 * MEDIA_THRESHOLD)))}


structured = st.one_of(
    st.none(),
    st.fixed_dictionaries({"n": st.integers()}),
    st.fixed_dictionaries({"rows": st.lists(st.text(alphabet=tricky_character, max_size=400),
                                            max_size=40)}),
    st.fixed_dictionaries({"big": large_text(max_bytes=20_000)}),
)

limits = st.integers(1 * KB, 8 * KB)
wires = st.none() | st.integers(1 * KB, 12 * KB)


def policy(threshold: int, ceiling: int | None = None) -> Policy:
    config = Config(media_threshold=MEDIA_THRESHOLD, batch_ceiling=ceiling or 256 * KB,
                    tools={"*": {"size_threshold": threshold}})
    return Policy(config, sink=MemoryStore(), notices=False)


def block_text(block: Any) -> str | None:
    """The text a content block carries to the model, if any."""
    if not isinstance(block, dict):
        return None
    if block.get("type") == "text":
        return block["text"]  # type: ignore[no-any-return]
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict):
        return resource.get("text")
    return None


def assert_within(sent: list[str], original: list[str], limit: int | None) -> None:
    """The sent texts fit ``limit`` together, are valid UTF-8 and fabricate nothing."""
    joined = "\n".join(sent)
    event("notes and text" if any(NOTE.match(t) for t in sent) and any(
        "[toolcap:" in t and not NOTE.match(t) for t in sent) else "text or notes")
    size = len(joined.encode("utf-8"))  # raises on a lone surrogate: never sent
    if limit is not None:
        assert size <= limit, f"{size} bytes of text sent over the {limit}-byte limit"
    source = sanitize("\n".join(original))
    for text in sent:
        if NOTE.match(text):
            continue
        for line in text.splitlines():
            assert "[toolcap:" in line or line in source, f"fabricated: {line[:80]!r}"


@settings(deadline=None, max_examples=150, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(content=st.lists(blocks(), min_size=1, max_size=12), structured=structured,
       is_error=st.booleans(), threshold=limits, ceiling=st.none() | limits, wire=wires)
def test_every_text_of_a_bounded_tool_result_fits_the_limit_notes_included(
    content: list[dict[str, Any]], structured: dict[str, Any] | None, is_error: bool,
    threshold: int, ceiling: int | None, wire: int | None,
) -> None:
    result: dict[str, Any] = {"content": content, "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    given_policy = policy(threshold, ceiling)
    bounded = bound_call_tool_result_dict(result, given_policy, tool="t", wire_budget=wire)
    if not bounded.changed:
        assert bounded.result is result
        return
    sent = [t for t in map(block_text, bounded.result["content"]) if t is not None]
    original = [t for t in map(block_text, content) if t is not None]
    limit = result_limit(given_policy, "t", wire)
    assert_within(sent, original, limit)
    assert bounded.result["_meta"]["toolcap/cut"]["limit"] == limit


@settings(deadline=None, max_examples=80, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(entries=st.lists(resources(), min_size=1, max_size=8),
       threshold=limits, wire=wires)
def test_every_text_of_a_bounded_resource_fits_the_limit_notes_included(
    entries: list[dict[str, Any]], threshold: int, wire: int | None
) -> None:
    given_policy = policy(threshold)
    result = {"contents": entries}
    bounded = bound_read_resource_result_dict(result, given_policy, uri="file:///x",
                                              wire_budget=wire)
    if not bounded.changed:
        return
    sent = [e["text"] for e in bounded.result["contents"] if isinstance(e.get("text"), str)]
    original = [e["text"] for e in entries if isinstance(e.get("text"), str)]
    assert_within(sent, original, result_limit(given_policy, "resource:file", wire))


@settings(deadline=None, max_examples=80, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(content=st.lists(blocks(), min_size=1, max_size=10), threshold=limits, wire=wires)
def test_every_text_of_a_bounded_prompt_fits_the_limit_notes_included(
    content: list[dict[str, Any]], threshold: int, wire: int | None
) -> None:
    messages = [{"role": "user" if i % 2 else "assistant", "content": block}
                for i, block in enumerate(content)]
    given_policy = policy(threshold)
    bounded = bound_get_prompt_result_dict({"messages": messages}, given_policy, name="p",
                                           wire_budget=wire)
    if not bounded.changed:
        return
    sent = [t for t in (block_text(m["content"]) for m in bounded.result["messages"])
            if t is not None]
    original = [t for t in map(block_text, content) if t is not None]
    assert_within(sent, original, result_limit(given_policy, "prompt:p", wire))


def utf8_total(content: list[dict[str, Any]]) -> int:
    return len("\n".join(t for t in map(block_text, content) if t is not None).encode())


def test_a_text_that_fits_alone_is_cut_to_leave_an_image_note_room() -> None:
    image = {"type": "image", "data": payload(3 * MEDIA_THRESHOLD), "mimeType": "image/png"}
    text = "line of text\n" * 78  # 1014 bytes: within 1 KB alone, not beside the note
    bounded = bound_call_tool_result_dict({"content": [{"type": "text", "text": text}, image]},
                                          policy(KB), tool="t")
    cut, note = bounded.result["content"]
    assert "[toolcap: output truncated" in cut["text"] and note["text"].startswith("[image ")
    assert utf8_total(bounded.result["content"]) <= KB
    assert bounded.result["_meta"]["toolcap/cut"]["cap"] == "size_threshold"


def test_the_note_about_a_structured_content_not_sent_fits_beside_the_text() -> None:
    schema = {"type": "object", "required": ["rows"], "properties": {"rows": {
        "type": "array", "minItems": 300, "items": {"type": "string"}}}}
    result = {"content": [{"type": "text", "text": "x" * 1000}],
              "structuredContent": {"rows": ["row"] * 300}}
    bounded = bound_call_tool_result_dict(result, policy(KB), tool="t", output_schema=schema)
    sent = bounded.result
    assert "structuredContent" not in sent and sent["isError"] is True
    assert sent["content"][-1]["text"].startswith("[structuredContent of ")
    assert utf8_total(sent["content"]) <= KB


def test_a_cut_structured_content_line_has_room_when_the_text_is_within_the_limit() -> None:
    structured = {"rows": [f"row {i}" for i in range(1000)]}
    small = bound_call_tool_result_dict(
        {"content": [{"type": "text", "text": "x" * 500}], "structuredContent": structured},
        policy(KB), tool="t").result
    assert small["content"][0]["text"] == "x" * 500
    assert small["content"][1]["text"].startswith("[toolcap: structuredContent cut from ")
    assert utf8_total(small["content"]) <= KB
    # A text within the limit alone but not beside the line is cut to leave it room.
    beside = bound_call_tool_result_dict(
        {"content": [{"type": "text", "text": "x" * 1000}], "structuredContent": structured},
        policy(KB), tool="t").result
    cut, line = beside["content"]
    assert "[toolcap: output truncated" in cut["text"]
    assert line["text"].startswith("[toolcap: structuredContent cut from ")
    assert utf8_total(beside["content"]) <= KB
    # A text over the limit is cut, and its marker is the one line that says so.
    large = bound_call_tool_result_dict(
        {"content": [{"type": "text", "text": "x" * 2000}], "structuredContent": structured},
        policy(KB), tool="t").result
    (block,) = large["content"]
    assert "[toolcap: output truncated" in block["text"]


def test_media_notes_too_many_for_the_limit_fold_into_one_naming_them_all() -> None:
    store = MemoryStore()
    config = Config(media_threshold=MEDIA_THRESHOLD, tools={"*": {"size_threshold": KB}})
    images = [{"type": "image", "data": payload(3 * MEDIA_THRESHOLD + i), "mimeType": "image/png"}
              for i in range(30)]
    content = [{"type": "text", "text": "x" * 5000}, *images]
    for bound in (bound_call_tool_result_dict,):
        bounded = bound({"content": content}, Policy(config, sink=store, notices=False),
                        tool="t")
        sent = bounded.result["content"]
        assert utf8_total(sent) <= KB
        assert "[toolcap: output truncated" in sent[0]["text"]
        fold = sent[-1]["text"]
        assert re.fullmatch(r"\[toolcap: \d+ more media not sent: over the 2.0 KB media limit; "
                            r"their notes: toolcap:[0-9a-f]{32}\]", fold)
        # Every image is named: by its own note, or by a line of the folded notes.
        listing = store.read_bytes(fold.split("their notes: ")[1][:-1]).decode()
        named = [b["text"] for b in sent[1:-1]] + listing.splitlines()
        assert len(named) == 30 and all(n.startswith("[image image/png of ") for n in named)
        for note in named:
            (ref,) = re.findall(r"toolcap:[0-9a-f]{32}", note)
            assert store.read_bytes(ref).startswith(b"\x89PNG")


def test_folded_notes_of_a_resource_and_a_prompt_stay_within_the_limit() -> None:
    given_policy = policy(KB)
    blobs = [{"uri": f"file:///{i}", "mimeType": "application/octet-stream",
              "blob": payload(3 * MEDIA_THRESHOLD)} for i in range(30)]
    read = bound_read_resource_result_dict({"contents": blobs}, given_policy, uri="file:///x")
    assert len("\n".join(e["text"] for e in read.result["contents"]).encode()) <= KB
    image = {"type": "image", "data": payload(3 * MEDIA_THRESHOLD), "mimeType": "image/png"}
    messages = [{"role": "user", "content": {"type": "text", "text": "y" * 3000}}] + [
        {"role": "assistant", "content": image} for _ in range(30)]
    got = bound_get_prompt_result_dict({"messages": messages}, given_policy, name="p")
    assert utf8_total([m["content"] for m in got.result["messages"]]) <= KB


@settings(deadline=None, max_examples=40, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(content=st.lists(blocks(), min_size=10, max_size=50), threshold=st.integers(KB, 3 * KB),
       wire=wires, structured=structured)
def test_many_media_notes_and_their_fold_fit_the_limit_with_the_text(
    content: list[dict[str, Any]], threshold: int, wire: int | None,
    structured: dict[str, Any] | None,
) -> None:
    result: dict[str, Any] = {"content": content}
    if structured is not None:
        result["structuredContent"] = structured
    given_policy = policy(threshold)
    bounded = bound_call_tool_result_dict(result, given_policy, tool="t", wire_budget=wire)
    if bounded.changed:
        sent = [t for t in map(block_text, bounded.result["content"]) if t is not None]
        original = [t for t in map(block_text, content) if t is not None]
        assert_within(sent, original, result_limit(given_policy, "t", wire))


@pytest.mark.parametrize(("uri_length", "wire"), [(10, 2 * KB), (400, 4 * KB), (400, 8 * KB)])
def test_the_fold_note_is_counted_with_the_fields_of_the_block_it_replaces(
    uri_length: int, wire: int
) -> None:
    # The fold note stands where the first folded resource stood, keeping its uri:
    # the contents' JSON stays within the wire budget however long the uris.
    config = Config(media_threshold=2 * KB, tools={"*": {"size_threshold": 64 * KB}})
    policy = Policy(config, sink=MemoryStore(), notices=False)
    blobs = [{"uri": f"file:///{'u' * uri_length}{i}", "mimeType": "application/octet-stream",
              "blob": base64.b64encode(b"\x89PNG" + bytes(6 * KB)).decode()} for i in range(30)]
    out = bound_read_resource_result_dict({"contents": blobs}, policy, uri="file:///x",
                                          wire_budget=wire)
    contents = out.result["contents"]
    assert any("more media not sent" in entry.get("text", "") for entry in contents)
    assert json_size(contents) <= wire
