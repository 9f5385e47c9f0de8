"""``toolcap.compact`` over generated conversations in each shape the adapters read.

For every shape: the result is a valid conversation of that shape (every call keeps
its result, ids and order unchanged), sizes follow trigger/target/keep_recent, every
masked output reads back byte for byte by its reference, compacting twice changes
nothing, the input is not mutated, and the same input gives the same output.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import toolcap
from _strategies import tricky_character
from toolcap.adapters._shapes import (
    chat_entries,
    langchain_entries,
    message_entries,
    responses_entries,
)
from toolcap.core._compaction import is_placeholder
from toolcap.core._json import dumps
from toolcap.core._utf8 import sanitize
from toolcap.store import LocalStore, MemoryStore

lc_messages = pytest.importorskip("langchain_core.messages")

SHAPES = ("chat", "responses", "anthropic", "langchain")
READERS = {"chat": chat_entries, "responses": responses_entries,
           "anthropic": message_entries, "langchain": langchain_entries}
TOOLS = ("Read", "Grep", "memory")
PNG = base64.b64encode(b"\x89PNG\r\n" + bytes(range(256)) * 8).decode()


@st.composite
def outputs(draw: st.DrawFn) -> Any:
    """A tool output: a text (often large), or a list of blocks with an image."""
    unit = draw(st.text(alphabet=tricky_character, min_size=1, max_size=40))
    text = unit * draw(st.integers(0, 600))
    if draw(st.integers(0, 5)) == 0:
        return [{"type": "text", "text": text}, {"type": "image", "data": PNG}]
    return text


@st.composite
def turns(draw: st.DrawFn) -> list[list[tuple[str, Any]]]:
    """Turns of tool calls: each a list of (tool, output)."""
    return draw(st.lists(
        st.lists(st.tuples(st.sampled_from(TOOLS), outputs()), min_size=1, max_size=3),
        min_size=1, max_size=8))


def _blocks(output: Any, text_type: str) -> Any:
    if isinstance(output, str):
        return output
    kind = "input_image" if text_type == "input_text" else "image"
    return [{"type": text_type, "text": output[0]["text"]},
            ({"type": kind, "image_url": f"data:image/png;base64,{PNG}"}
             if kind == "input_image" else
             {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": PNG}})]


def build(shape: str, conversation: list[list[tuple[str, Any]]]) -> list[Any]:
    """The conversation written in ``shape``, with a user question first and a reply last."""
    items: list[Any] = []
    if shape == "langchain":
        items.append(lc_messages.HumanMessage("go", id="h0"))
    else:
        items.append({"role": "user", "content": "go"})
    for t, calls in enumerate(conversation):
        ids = [f"call_{t}_{k}" for k in range(len(calls))]
        pairs = list(zip(ids, calls, strict=True))
        if shape == "chat":
            items.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": "{}"}}
                for i, (n, _) in pairs]})
            items += [{"role": "tool", "tool_call_id": i, "content": _blocks(o, "text")}
                      for i, (_, o) in pairs]
        elif shape == "responses":
            items += [{"type": "function_call", "call_id": i, "name": n, "arguments": "{}"}
                      for i, (n, _) in pairs]
            items += [{"type": "function_call_output", "call_id": i,
                       "output": _blocks(o, "input_text")} for i, (_, o) in pairs]
        elif shape == "anthropic":
            items.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": i, "name": n, "input": {}}
                for i, (n, _) in pairs]})
            items.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": _blocks(o, "text")}
                for i, (_, o) in pairs]})
        else:
            items.append(lc_messages.AIMessage("", id=f"a{t}", tool_calls=[
                {"id": i, "name": n, "args": {}} for i, (n, _) in pairs]))
            items += [lc_messages.ToolMessage(content=_blocks(o, "text"), tool_call_id=i,
                                              id=f"t{i}") for i, (_, o) in pairs]
    return items


def skeleton(shape: str, items: list[Any]) -> list[tuple[str, str | None, str]]:
    """What must never change: each entry's kind, call id and tool, in order."""
    return [(entry.kind, entry.result.call_id if entry.result else None,
             entry.result.tool if entry.result else "")
            for entry in READERS[shape](items)]


def contents(shape: str, items: list[Any]) -> list[Any]:
    return [entry.result.content for entry in READERS[shape](items) if entry.result]


def original_bytes(content: Any) -> bytes:
    if isinstance(content, str):
        return sanitize(content).encode()
    return dumps(content).encode()


def snapshot(items: list[Any]) -> Any:
    return [m.model_dump() if hasattr(m, "model_dump") else copy.deepcopy(m) for m in items]


settings_ = settings(deadline=None, max_examples=60,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("shape", SHAPES)
@settings_
@given(conversation=turns(), trigger=st.integers(0, 60_000), gap=st.integers(0, 60_000),
       keep_recent=st.integers(0, 20_000), exclude=st.sets(st.sampled_from(TOOLS), max_size=1))
def test_compact_keeps_the_shape_follows_the_marks_and_loses_nothing(
    shape: str, conversation: Any, trigger: int, gap: int, keep_recent: int, exclude: set[str],
) -> None:
    items = build(shape, conversation)
    before = snapshot(items)
    target = max(0, trigger - gap)
    options: dict[str, Any] = dict(trigger=trigger, target=target, keep_recent=keep_recent,
                                   exclude_tools=exclude)
    store = MemoryStore()
    result, report = toolcap.compact(items, store=store, **options)

    assert snapshot(items) == before, "the input was modified"
    assert report.format == shape
    assert skeleton(shape, result) == skeleton(shape, items), "calls, ids or order changed"
    old, new = contents(shape, items), contents(shape, result)
    tools = [entry.result.tool for entry in READERS[shape](items) if entry.result]
    latest = {entry.result.call_id for entry in READERS[shape](items)[
        max(i for i, e in enumerate(READERS[shape](items)) if e.kind == "turn"):] if entry.result}
    masked = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a is not b]
    assert len(masked) == len(report.masked)
    event("masked some" if masked else "masked none")
    if report.before <= trigger:
        assert masked == [] and all(a is b for a, b in zip(items, result, strict=True))
    for i, record in zip(masked, report.masked, strict=True):
        assert is_placeholder(new[i]) and record.reference in new[i]
        assert tools[i] not in exclude
        assert record.call_id not in latest, "the latest turn's results are never masked"
        assert store.read_bytes(record.reference) == original_bytes(old[i])
    assert report.after <= report.before
    if masked and report.after > target:
        assert "protected" in report.reason
    # Twice changes nothing; the same input gives the same output.
    again, second = toolcap.compact(result, store=store, **options)
    assert second.masked == () and again == result
    same, _ = toolcap.compact(copy.deepcopy(items) if shape != "langchain" else items,
                              store=MemoryStore(), **options)
    assert same == result


@pytest.mark.parametrize("shape", SHAPES)
def test_the_format_is_told_from_the_shapes(shape: str) -> None:
    items = build(shape, [[("Read", "x" * 5000)]])
    assert toolcap.compact(items, trigger=10**9).report.format == shape


def test_masked_outputs_read_back_from_a_local_store(tmp_path: Any) -> None:
    items = build("chat", [[("Read", f"line {t}\n" * 4000)] for t in range(5)])
    store = LocalStore(tmp_path)
    _, report = toolcap.compact(items, trigger="64KB", target="32KB", keep_recent=0,
                                store=store)
    assert len(report.masked) >= 3
    for record in report.masked:
        message = next(m for m in items if m.get("tool_call_id") == record.call_id)
        assert store.read_bytes(record.reference) == message["content"].encode()


def test_identical_outputs_get_the_same_reference() -> None:
    items = build("anthropic", [[("Read", "same\n" * 9000)] for _ in range(4)])
    _, report = toolcap.compact(items, trigger="64KB", target="20KB", keep_recent=0,
                                store=MemoryStore())
    assert len(report.masked) == 3
    assert len({record.reference for record in report.masked}) == 1


def test_a_capped_output_names_its_true_original_and_no_marker_nests() -> None:
    policy = toolcap.Policy(sink=MemoryStore())
    capped = policy.finalize([toolcap.ToolResponse("Read", "a line of log\n" * 300_000)])[0].text
    assert capped is not None and "[toolcap: output truncated" in capped
    items = build("chat", [[("Read", capped)], [("Read", "x" * 40_000)], [("Grep", "y")]])
    result, report = toolcap.compact(items, trigger="48KB", target="40KB", keep_recent=0,
                                     store=MemoryStore())
    placeholder = result[2]["content"]
    assert "cut from 4.0 MB" in placeholder
    assert placeholder.count("[toolcap:") == 1 and placeholder.count("]") == 1
    full = capped.split("full output: ")[1][:40]
    assert f"full output {full}" in placeholder and report.masked[0].reference in placeholder


def test_a_store_failure_masks_nothing_loses_nothing_and_says_why() -> None:
    from toolcap.store import UnavailableStore

    items = build("chat", [[("Read", "z" * 50_000)] for _ in range(4)])
    result, report = toolcap.compact(items, trigger="64KB", target="32KB", keep_recent=0,
                                     store=UnavailableStore("disk full"))
    assert result == items and report.masked == ()
    assert [failed.reason for failed in report.not_masked] == ["disk full"] * 3
    assert "not masked (disk full)" in str(report)


def test_bad_settings_are_one_line_errors() -> None:
    items = build("chat", [[("Read", "x")]])
    with pytest.raises(toolcap.ConfigError, match="share of the context window"):
        toolcap.compact(items, trigger=0.5)
    with pytest.raises(toolcap.ConfigError, match="low watermark"):
        toolcap.compact(items, trigger="10KB", target="20KB")
    with pytest.raises(toolcap.ConfigError, match="unknown conversation format"):
        toolcap.compact(items, format="gemini")


def test_shares_of_the_context_window_set_the_marks() -> None:
    items = build("chat", [[("Read", "x" * 30_000)] for _ in range(4)])
    _, report = toolcap.compact(items, context_window="200KB", trigger=0.5, target=0.25,
                                keep_recent=0, store=MemoryStore())
    assert (report.trigger, report.target) == (102_400, 51_200)
    assert report.after <= 51_200 < report.before


def test_a_report_is_json_friendly() -> None:
    items = build("responses", [[("Read", "x" * 30_000)] for _ in range(3)])
    _, report = toolcap.compact(items, trigger="40KB", keep_recent=0, store=MemoryStore())
    json.dumps([vars(record) for record in report.masked])


# -- measured in tokens ------------------------------------------------------------------

def _counters() -> dict[str, Any]:
    from toolcap import _tokenizer

    found: dict[str, Any] = {"estimate": toolcap.estimate_tokens, "characters": len}
    real = _tokenizer.o200k_counter()
    if real is not None:
        found["o200k_base"] = real
    return found


COUNTERS = _counters()


@pytest.mark.parametrize("counter", sorted(COUNTERS))
@pytest.mark.parametrize("shape", ["chat", "anthropic"])
@settings(deadline=None, max_examples=25,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversation=turns(), trigger=st.integers(0, 15_000), gap=st.integers(0, 15_000),
       keep_recent=st.integers(0, 5_000))
def test_compact_in_tokens_masks_down_to_the_target_in_tokens(
    counter: str, shape: str, conversation: Any, trigger: int, gap: int, keep_recent: int,
) -> None:
    count = COUNTERS[counter]
    items = build(shape, conversation)
    target = max(0, trigger - gap)
    options: dict[str, Any] = dict(trigger=f"{trigger} tokens", target=target,
                                   keep_recent=f"{keep_recent} tokens", measure="tokens",
                                   tokenizer=count)
    store = MemoryStore()
    result, report = toolcap.compact(items, store=store, **options)

    assert (report.measure, report.trigger, report.target) == ("tokens", trigger, target)
    texts = [c for c in contents(shape, items) if isinstance(c, str)]
    if len(texts) == len(contents(shape, items)):  # text only: measured here, independently
        assert report.before == sum(count(sanitize(c)) for c in texts)
        assert report.after == sum(count(sanitize(c)) for c in contents(shape, result))
    measured_again = toolcap.compact(result, store=store, **options).report
    assert measured_again.before == report.after and measured_again.masked == ()
    if report.before <= trigger:
        assert report.masked == ()
    elif report.after > target:
        assert "protected" in report.reason
    for record in report.masked:
        assert store.read_bytes(record.reference)
        assert record.size > record.placeholder_size


def test_compact_in_tokens_says_what_counted_and_speaks_tokens() -> None:
    items = build("chat", [[("Read", "a line of log\n" * 1000)] for _ in range(5)])
    result, report = toolcap.compact(items, measure="tokens", trigger="10k tokens",
                                keep_recent="1k tokens", tokenizer=toolcap.estimate_tokens,
                                store=MemoryStore())
    assert report.counter == "estimate" and len(report.masked) >= 3
    assert "tokens" in str(report) and "counted by estimate" in str(report)
    assert report.after <= 5000 < report.before
    # The placeholder names the stored original's size in bytes, whatever the measure.
    assert "of 13.6 KB; kept as" in result[2]["content"]


def test_compact_in_bytes_takes_limits_in_tokens_at_three_bytes_each() -> None:
    items = build("chat", [[("Read", "x" * 30_000)] for _ in range(4)])
    _, report = toolcap.compact(items, trigger="20k tokens", target="10k tokens",
                                keep_recent=0, store=MemoryStore())
    assert (report.measure, report.trigger, report.target) == ("bytes", 60_000, 30_000)


def test_compact_in_tokens_refuses_sizes_and_unknown_measures_in_one_line() -> None:
    items = build("chat", [[("Read", "x")]])
    for options, fragment in (
        ({"trigger": "512KB"}, "trigger: '512KB' is in bytes, but the measure is tokens"),
        ({"keep_recent": "8KB"}, "keep_recent: '8KB' is in bytes"),
        ({"context_window": "800KB", "trigger": 0.5}, "context_window: '800KB' is in bytes"),
        ({"trigger": "25kb tokens"}, "trigger: invalid number of tokens"),
    ):
        with pytest.raises(toolcap.ConfigError, match=fragment) as error:
            toolcap.compact(items, measure="tokens", **options)
        assert "\n" not in str(error.value)
    with pytest.raises(toolcap.ConfigError, match=r'measure: .* write "bytes" or "tokens"'):
        toolcap.compact(items, measure="words")


def test_shares_of_a_window_in_tokens_set_the_marks_in_tokens() -> None:
    items = build("chat", [[("Read", "x" * 2_000)] for _ in range(6)])
    _, report = toolcap.compact(items, measure="tokens", context_window="20k tokens",
                                trigger=0.5, target=0.25, keep_recent=0, tokenizer=len,
                                store=MemoryStore())
    assert (report.trigger, report.target) == (10_000, 5_000)
    assert report.after <= 5_000 < report.before


def test_compacting_in_tokens_again_counts_no_output_twice() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 4

    items = build("chat", [[("Read", f"line {turn}\n" * 2_000)] for turn in range(6)])
    options: dict[str, Any] = dict(measure="tokens", trigger="10k tokens", target="5k tokens",
                                   keep_recent=0, tokenizer=count, store=MemoryStore())
    _, first = toolcap.compact(items, **options)
    assert first.masked and len(counted) >= 6
    counted.clear()
    _, again = toolcap.compact(items, **options)
    assert counted == [] and again == first
