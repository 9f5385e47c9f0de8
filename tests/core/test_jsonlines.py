"""JSON Lines are cut by whole lines: every delivered line but the marker still parses."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import keys, numbers, short_strings, write_json
from toolcap.core._jsoncut import cut_by_format

PROPERTY = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MARKER = "[toolcap: output truncated"

small = st.recursive(st.one_of(st.none(), st.booleans(), numbers, short_strings),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(keys, inner, max_size=4)),
                     max_leaves=12)
records = st.one_of(st.dictionaries(keys, small, max_size=6), st.lists(small, max_size=5))


@st.composite
def json_lines(draw: st.DrawFn) -> str:
    lines = [write_json(record, None) for record in draw(st.lists(records, min_size=2,
                                                                 max_size=400))]
    for at in draw(st.lists(st.integers(0, len(lines)), max_size=3)):
        lines.insert(at, draw(st.sampled_from(["", "  ", "\r"])))  # blank lines are allowed
    if draw(st.booleans()):
        lines[0] = "  " + lines[0]
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))


@PROPERTY
@given(json_lines(), st.integers(1024, 8192), st.sampled_from(["head_tail", "head", "tail"]),
       st.sampled_from([0.2, 0.5, 0.9]))
def test_every_delivered_line_but_the_marker_parses_and_is_an_input_line(
    text: str, limit: int, strategy: str, ratio: float
) -> None:
    result = cut_by_format(text, limit, strategy=strategy,  # type: ignore[arg-type]
                           head_ratio=ratio)
    assert result.kept_bytes == len(result.text.encode("utf-8")) <= limit
    if not result.truncated:
        assert result.text == text
        return
    input_lines = set(text.split("\n"))
    delivered = result.text.split("\n")
    markers = [line for line in delivered if line.startswith(MARKER)]
    assert len(markers) == 1, "the marker is its own line"
    for line in delivered:
        if line in markers:
            continue
        assert line in input_lines
        if line.strip():
            json.loads(line)


def test_a_json_lines_export_keeps_whole_records_at_both_ends() -> None:
    text = "".join(json.dumps({"id": n, "name": f"item {n}", "tags": ["a", "b"]}) + "\n"
                   for n in range(5000))
    result = cut_by_format(text, 4096)
    lines = result.text.split("\n")
    assert lines[0] == '{"id": 0, "name": "item 0", "tags": ["a", "b"]}'
    assert lines[-1] == ""  and lines[-2].startswith('{"id": 4999,')
    assert sum(line.startswith(MARKER) for line in lines) == 1
    assert all(json.loads(line) for line in lines if line and not line.startswith(MARKER))


def test_a_log_that_only_starts_like_json_keeps_the_text_cut() -> None:
    text = "[2026-11-29 12:00:00] INFO started\n" * 3000
    assert cut_by_format(text, 4096).text == cut_by_format(text, 4096, format="text").text


def test_format_text_turns_the_line_cut_off() -> None:
    text = "".join(json.dumps({"n": n, "pad": "x" * 890}) + "\n" for n in range(2000))
    by_lines = cut_by_format(text, 4096, head_ratio=0.33)
    as_text = cut_by_format(text, 4096, format="text", head_ratio=0.33)
    assert by_lines.text != as_text.text
    assert all(json.loads(line) for line in by_lines.text.split("\n")
               if line and not line.startswith(MARKER))


def test_cutting_a_cut_json_lines_text_again_changes_nothing() -> None:
    text = "".join(json.dumps({"n": n}) + "\n" for n in range(9000))
    once = cut_by_format(text, 4096)
    assert cut_by_format(once.text, 4096).text == once.text
