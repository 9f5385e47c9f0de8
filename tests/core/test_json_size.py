"""json_size and dumps: the exact UTF-8 bytes of the compact JSON serialization."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.core._jsonsize import dumps, json_size
from toolcap.core._utf8 import CHUNK as _CHUNK

DATA = Path(__file__).parent.parent / "data" / "json_sizes.json"

CONTROLS = [chr(c) for c in range(0x20)]
CLASSES: dict[str, list[str]] = {
    "ascii": list("abcxyz XYZ019/{}[]:,'"),
    "quote": ['"'],
    "backslash": ["\\"],
    "control": CONTROLS,
    "delete": ["\x7f"],
    "latin": ["é", "ß", "\x80", "\xff"],
    "cjk": ["漢", "字", "か", "한"],
    "emoji": ["😀", "🎉", "\U0010ffff", "\U00010000"],
    "paired_surrogates": ["\ud83d\ude00", "\udbff\udfff", "\ud800\udc00"],
    "lone_surrogates": ["\ud800", "\udbff", "\udc00", "\udfff"],
    "separators": ["\u2028", "\u2029"],
    "bmp_edges": ["\ufeff", "\uffff", "\ue000"],
}
ALL_PIECES = [piece for pieces in CLASSES.values() for piece in pieces]


def reference(value: object) -> bytes:
    """The serialization json_size measures, built the obvious way."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # Join surrogate pairs into their characters, as a UTF-16 decoder does...
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    # ...and escape the surrogates left, which are lone.
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8")


def random_text(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(ALL_PIECES) for _ in range(length))


def load_cases() -> list[Any]:
    cases = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
    return [
        pytest.param(
            "".join(map(chr, case["codepoints"])) if "codepoints" in case else case["text"],
            case["json_bytes"],
            id=case["name"],
        )
        for case in cases
    ]


@pytest.mark.parametrize(("text", "expected"), load_cases())
def test_json_size_matches_hand_worked_cases(text: str, expected: int) -> None:
    assert json_size(text) == expected
    assert len(reference(text)) == expected


def test_json_size_matches_reference_on_seeded_fuzz_of_mixed_strings() -> None:
    rng = random.Random(20261129)
    for _ in range(5000):
        text = random_text(rng, rng.randrange(0, 120))
        assert json_size(text) == len(reference(text)), repr(text)


def test_json_size_matches_reference_on_strings_of_a_single_class() -> None:
    rng = random.Random(7)
    for name, pieces in CLASSES.items():
        for length in (1, 2, 3, 17, 1000):
            text = "".join(rng.choice(pieces) for _ in range(length))
            assert json_size(text) == len(reference(text)), name


@pytest.mark.parametrize("code", range(0x20))
def test_every_control_character_is_measured_as_its_escape(code: int) -> None:
    text = f"a{chr(code)}b"
    assert json_size(text) == len(reference(text))
    assert json_size(text) == 4 + len(json.dumps(chr(code))) - 2


def test_a_surrogate_pair_across_the_measuring_slices_counts_as_one_character() -> None:
    # The pair straddles the slice boundary used for long strings.
    text = "a" * (_CHUNK - 1) + "\ud83d\ude00" + "b" * 10
    assert json_size(text) == len(reference(text)) == 2 + _CHUNK - 1 + 4 + 10


def test_json_size_matches_reference_on_long_mixed_strings() -> None:
    rng = random.Random(3)
    text = random_text(rng, 3 * _CHUNK + 11)
    assert json_size(text) == len(reference(text))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -17,
        10**40,
        1.5,
        -0.0,
        1e300,
        float("nan"),
        float("inf"),
        [],
        {},
        [1, "two", [3, {"four": None}]],
        {"type": "text", "text": 'say "hi"\n'},
        {"\ud800": "\ud83d\ude00", "漢": ["\x00", "\u2028"]},
        {7: "int key", 2.5: "float key", True: "bool key", False: "no", None: "null key"},
        ("tuple", "is", "an", "array"),
        [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    ],
)
def test_json_size_of_any_json_value_matches_reference(value: object) -> None:
    assert json_size(value) == len(reference(value))


def test_json_size_refuses_what_json_dumps_refuses() -> None:
    with pytest.raises(TypeError):
        json_size({"a": object()})
    with pytest.raises(TypeError):
        json_size({(1, 2): "tuple key"})
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError):
        json_size(loop)


def test_a_shared_subvalue_is_not_a_circular_reference() -> None:
    shared = ["x"]
    value = [shared, shared, {"a": shared}]
    assert json_size(value) == len(reference(value))


def test_dumps_is_the_reference_serialization_and_always_valid_utf8() -> None:
    rng = random.Random(11)
    for _ in range(500):
        value = {"text": random_text(rng, rng.randrange(0, 60)), "n": [1, None]}
        out = dumps(value)
        assert out.encode("utf-8") == reference(value)
        assert len(out.encode("utf-8")) == json_size(value)


def test_dumps_round_trips_text_without_surrogates() -> None:
    value = {"text": 'a"b\\c\n\x00漢😀\u2028'}
    assert json.loads(dumps(value)) == value


def test_dumps_returns_surrogate_free_serialization_as_is() -> None:
    assert dumps("漢字") == '"漢字"'


characters = st.one_of(
    st.characters(exclude_categories=()),  # every code point, surrogates included
    st.sampled_from(ALL_PIECES),
)


any_text = st.lists(characters, max_size=80).map("".join)


@settings(deadline=None, derandomize=True, max_examples=300)
@given(any_text)
def test_json_size_equals_reference_for_any_string(text: str) -> None:
    assert json_size(text) == len(reference(text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(any_text, children, max_size=4),
    max_leaves=20,
)


@settings(deadline=None, derandomize=True, max_examples=200)
@given(json_values)
def test_json_size_equals_reference_for_any_json_value(value: object) -> None:
    assert json_size(value) == len(reference(value))


def test_a_long_string_measured_again_with_a_shared_table_is_measured_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolcap.core import _jsonsize

    text = 'line "one"\n\u2028 漢\x01' * 10_000  # long enough to be remembered
    other = text[:-1] + "y"  # same length, another string: measured on its own
    measured: list[int] = []
    real = _jsonsize.measure

    def counting(value: str) -> _jsonsize.Size:
        measured.append(len(value))
        return real(value)

    monkeypatch.setattr(_jsonsize, "measure", counting)
    seen: dict[int, tuple[str, int]] = {}
    content = [{"type": "text", "text": text}]
    structured = {"result": text, "again": [text, other]}
    assert json_size(content, seen) + json_size(structured, seen) == len(
        reference(content)) + len(reference(structured))
    assert sum(1 for size in measured if size == len(text)) == 2  # text, then other
    assert json_size(content) == len(reference(content))  # without a table: measured again
    assert sum(1 for size in measured if size == len(text)) == 3
