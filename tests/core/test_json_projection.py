"""project_json_text and project_json_blocks: a JSON-byte bound on what goes on the wire."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap import ConfigError, human_size
from toolcap.core._json import (
    DEFAULT_WIRE_MARKER,
    TEXT_BLOCK_OVERHEAD,
    dumps,
    json_size,
    project_json_blocks,
    project_json_text,
)
from toolcap.core._marker import Marker

BUDGET = 65536
SIZE = r"\d+(?:\.\d)? (?:B|KB|MB|GB)"
WIRE_MARKER = re.compile(
    rf"\n\[toolcap: {SIZE} of {SIZE} omitted here to fit the {SIZE} wire limit\]\n"
)
SHORT_MARKERS = ("[toolcap: truncated]", "…")

# One representative of each character class the serialization treats apart.
CLASS_PIECES = {
    "ascii": "a",
    "quote": '"',
    "backslash": "\\",
    "newline": "\n",
    "nul": "\x00",
    "control": "\x1f",
    "cjk": "漢",
    "emoji": "😀",
    "paired_surrogates": "\ud83d\ude00",
    "lone_high_surrogate": "\ud800",
    "lone_low_surrogate": "\udfff",
    "line_separator": "\u2028",
}


def wire_bytes(text: str) -> bytes:
    """The JSON string as sent; encoding it proves it is valid UTF-8."""
    return dumps(text).encode("utf-8")


def splits_pair(text: str, index: int) -> bool:
    return (
        0 < index < len(text)
        and "\ud800" <= text[index - 1] <= "\udbff"
        and "\udc00" <= text[index] <= "\udfff"
    )


def decompose(text: str, out: str) -> tuple[str, str, str]:
    """Split ``out`` into a prefix of ``text``, a marker and a suffix of ``text``.

    Fails the test when no such split exists: the projection fabricated something.
    """
    cuts = [(m.start(), m.end()) for m in WIRE_MARKER.finditer(out)]
    for short in SHORT_MARKERS:
        cuts += [(m.start(), m.end()) for m in re.finditer(re.escape(short), out)]
    if len(out) <= 64:
        cuts += [(i, i) for i in range(len(out) + 1)]  # no room even for a short marker
    for start, end in cuts:
        head, marker, tail = out[:start], out[start:end], out[end:]
        if (
            text.startswith(head)
            and text.endswith(tail)
            and len(head) + len(tail) < len(text)
            and not splits_pair(text, len(head))
            and not splits_pair(text, len(text) - len(tail))
        ):
            return head, marker, tail
    raise AssertionError(f"{out[:80]!r}… is not a prefix, a marker and a suffix of the input")


def check(text: str, budget: int) -> str:
    """Project, and check every promise that holds for any input and budget."""
    out = project_json_text(text, budget)
    assert len(wire_bytes(out)) == json_size(out) <= budget
    if json_size(text) <= budget:
        assert out is text
    else:
        decompose(text, out)
    return out


def sized(piece: str, total: int, where: str) -> str:
    """A text whose JSON string is exactly ``total`` bytes, ``piece`` at ``where``."""
    cost = json_size(piece) - 2
    if where == "throughout":
        count = (total - 2) // cost
        text = "x" * (total - 2 - count * cost) + piece * count
    elif where == "end":
        text = "x" * (total - 2 - cost) + piece
    else:
        text = piece + "x" * (total - 2 - cost)
    assert json_size(text) == total
    return text


@pytest.mark.parametrize("where", ["start", "end", "throughout"])
@pytest.mark.parametrize("total", [65535, 65536, 65537])
@pytest.mark.parametrize("piece", CLASS_PIECES.values(), ids=CLASS_PIECES.keys())
def test_each_character_class_at_the_budget_boundary(piece: str, total: int, where: str) -> None:
    text = sized(piece, total, where)
    out = check(text, BUDGET)
    if total <= BUDGET:
        assert out is text
    else:
        # A cut leaves at most a character's worth of bytes unused at each end.
        assert json_size(out) >= BUDGET - 12


def test_text_that_fits_comes_back_as_the_same_object() -> None:
    text = "漢" * 1000 + '"\n' * 100
    assert project_json_text(text, json_size(text)) is text
    assert project_json_text("") == ""


def test_ascii_is_cut_20_percent_head_80_percent_tail_to_exactly_the_budget() -> None:
    text = "".join(f"line {i}\n" for i in range(200_000))
    out = project_json_text(text, BUDGET)
    head, marker, tail = decompose(text, out)
    room = BUDGET - 2 - (json_size(marker) - 2)
    assert json_size(head) - 2 == room // 5
    assert json_size(tail) - 2 == room - room // 5
    assert json_size(out) == BUDGET


def test_the_marker_names_the_omitted_and_original_sizes_and_the_budget() -> None:
    text = "x" * 3_250_586
    out = project_json_text(text, BUDGET)
    head, marker, tail = decompose(text, out)
    omitted = len(text) - len(head) - len(tail)
    expected = DEFAULT_WIRE_MARKER.format(
        omitted=human_size(omitted), original="3.1 MB", budget="64.0 KB", where=""
    )
    assert marker == expected
    assert len(marker.encode()) <= 200


def test_projection_is_idempotent() -> None:
    for text in ("x" * 200_000, "漢\n" * 50_000, "\x00" * 30_000, "\ud83d\ude00" * 40_000):
        once = project_json_text(text, BUDGET)
        assert project_json_text(once, BUDGET) is once


@pytest.mark.parametrize("shift", range(8))
@pytest.mark.parametrize("pair", ["😀", "\ud83d\ude00"])
def test_no_cut_splits_a_pair_whatever_the_alignment(shift: int, pair: str) -> None:
    for text in ("x" * shift + pair * 40_000, pair * 40_000 + "!" * shift):
        out = check(text, BUDGET)
        # Any surrogate left alone by a cut would be escaped on the wire.
        assert b"\\ud" not in wire_bytes(out)


def test_large_ascii_cjk_and_newline_results_fit_the_wire_budget() -> None:
    for text in ("a" * 499_999, "漢" * 500_001, "\n" * 300_000 + "b" * 300_000):
        out = check(text, BUDGET)
        assert BUDGET - 6 <= json_size(out) <= BUDGET


@pytest.mark.parametrize("budget", range(2, 140))
def test_tiny_budgets_stay_bounded_with_a_short_marker_or_none(budget: int) -> None:
    for text in ("a" * 500, "\x00" * 100, "😀" * 100, "\ud800" * 100, '"' * 300):
        out = check(text, budget)
        _, marker, _ = decompose(text, out)
        if budget >= 2 + json_size(SHORT_MARKERS[0]):
            assert marker  # some marker stands at the cut whenever one fits


def test_a_custom_marker_is_rendered_at_the_cut() -> None:
    out = project_json_text("y" * 10_000, 2048, marker="<<{omitted} of {original} cut>>")
    assert re.search(r"<<7\.\d KB of 9\.7 KB cut>>", out)
    assert json_size(out) == 2048


def test_bad_arguments_are_refused() -> None:
    # A bad wire marker is a configuration error, as a bad size marker is (core/_marker.py).
    with pytest.raises(ConfigError, match="200 bytes"):
        project_json_text("z" * 10_000, 4096, marker="m" * 201)
    with pytest.raises(ConfigError, match="marker template"):
        project_json_text("z" * 10_000, 4096, marker="{unknown}")
    with pytest.raises(ConfigError):
        Marker.parse("{unknown}")
    with pytest.raises(ValueError, match="2 bytes"):
        project_json_text("z", 1)


characters = st.one_of(
    st.characters(exclude_categories=()),  # every code point, surrogates included
    st.sampled_from([*CLASS_PIECES.values(), "\u2029", "\x7f", "é"]),
)
any_text = st.lists(characters, max_size=400).map("".join)


@settings(deadline=None, derandomize=True, max_examples=400)
@given(any_text, st.integers(min_value=2, max_value=1500))
def test_any_text_is_bounded_valid_and_made_only_of_input_and_marker(
    text: str, budget: int
) -> None:
    check(text, budget)


# ---------------------------------------------------------------- blocks


def serialized(texts: list[str]) -> int:
    """JSON bytes of the content array, serialized for real."""
    return len(dumps([{"type": "text", "text": t} for t in texts]).encode("utf-8"))


def test_blocks_that_fit_come_back_as_the_same_objects() -> None:
    texts = ["alpha", "beta" * 100, "漢" * 1000]
    out = project_json_blocks(texts, BUDGET)
    assert out == texts
    assert all(a is b for a, b in zip(out, texts, strict=True))


def test_two_equal_blocks_get_lengths_within_one_byte() -> None:
    out = project_json_blocks(["a" * 300_000, "b" * 300_000], BUDGET)
    assert len(out) == 2
    assert abs(json_size(out[0]) - json_size(out[1])) <= 1
    assert serialized(out) == BUDGET


def test_small_blocks_stay_whole_while_the_large_ones_share_the_rest() -> None:
    small, medium = "ok", "m" * 5000
    texts = [small, "x" * 1_000_000, medium, "y" * 2_000_000]
    out = project_json_blocks(texts, BUDGET)
    assert out[0] is small
    assert out[2] is medium
    assert abs(json_size(out[1]) - json_size(out[3])) <= 1
    assert serialized(out) == BUDGET
    decompose(texts[1], out[1])
    decompose(texts[3], out[3])


@settings(deadline=None, derandomize=True, max_examples=200)
@given(
    st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=8),
    st.integers(min_value=300, max_value=20_000),
)
def test_ascii_blocks_saturate_the_budget_exactly(lengths: list[int], budget: int) -> None:
    texts = [chr(ord("a") + i) * n for i, n in enumerate(lengths)]
    out = project_json_blocks(texts, budget)
    if serialized(texts) <= budget:
        assert out == texts
    elif len(out) == len(texts):
        assert serialized(out) == budget


def test_many_empty_blocks_collapse_to_one_omission_marker() -> None:
    out = project_json_blocks([""] * 10_000, BUDGET)
    assert len(out) == 1
    assert "10000 text blocks" in out[0]
    assert serialized(out) <= BUDGET


def test_many_small_blocks_collapse_under_a_tiny_budget() -> None:
    texts = ["abc"] * 100
    out = project_json_blocks(texts, 1024)
    assert len(out) == 1
    assert out[0].startswith("[toolcap: 100 text blocks (300 B) omitted")
    assert serialized(out) <= 1024


def test_blocks_collapse_exactly_when_the_empty_structure_cannot_fit() -> None:
    texts = ["some text"] * 10
    empty = serialized([""] * 10)
    assert len(project_json_blocks(texts, empty)) == 10
    assert project_json_blocks(texts, empty) == [""] * 10
    assert len(project_json_blocks(texts, empty - 1)) == 1


def test_a_collapse_marker_is_cut_to_the_budget_and_below_one_block_is_refused() -> None:
    out = project_json_blocks(["x"] * 50, 40)
    assert serialized(out) <= 40
    assert "[toolcap: 50 text blocks".startswith(out[0])
    with pytest.raises(ValueError):
        project_json_blocks(["x"] * 50, serialized([""]) - 1)


def test_no_blocks_is_an_empty_array() -> None:
    assert project_json_blocks([], 2) == []


def test_block_projection_is_deterministic() -> None:
    texts = ["漢" * 40_000, '"\n' * 30_000, "😀" * 20_000, "tail"]
    first = project_json_blocks(texts, BUDGET)
    assert first == project_json_blocks(list(texts), BUDGET)
    assert serialized(first) <= BUDGET
    assert first[3] is texts[3]


def test_blocks_with_extra_fields_are_bounded_with_their_overheads() -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "a" * 100_000, "annotations": {"priority": 0.5}},
        {"type": "text", "text": "b" * 100_000},
    ]
    overheads = [json_size({**b, "text": ""}) - 2 for b in blocks]
    assert overheads[1] == TEXT_BLOCK_OVERHEAD
    texts = project_json_blocks([b["text"] for b in blocks], 4096, overheads=overheads)
    sent = [{**b, "text": t} for b, t in zip(blocks, texts, strict=True)]
    assert len(dumps(sent).encode()) == 4096


@settings(deadline=None, derandomize=True, max_examples=300)
@given(
    st.lists(st.lists(characters, max_size=300).map("".join), max_size=6),
    st.integers(min_value=27, max_value=3000),
)
def test_any_blocks_are_bounded_ordered_and_cut_largest_first(
    texts: list[str], budget: int
) -> None:
    out = project_json_blocks(texts, budget)
    assert serialized(out) <= budget
    if len(out) != len(texts):
        assert len(out) == 1
        assert serialized([""] * len(texts)) > budget
        return
    cut = [json_size(t) for t, o in zip(texts, out, strict=True) if o is not t]
    whole = [json_size(t) for t, o in zip(texts, out, strict=True) if o is t]
    if cut and whole:
        assert max(whole) <= min(cut)
    for text, projected in zip(texts, out, strict=True):
        if projected is not text:
            decompose(text, projected)
