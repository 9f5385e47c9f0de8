"""The span-tracking JSON reader agrees with json.loads and locates every string exactly."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcap.sessions._jsonspan import JSONSpanError, Located, parse_value
from toolcap.sessions._repair import splice

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)
layouts = st.sampled_from([
    {}, {"indent": 2}, {"indent": "\t"}, {"separators": (",", ":")},
    {"ensure_ascii": False}, {"indent": 1, "ensure_ascii": False},
])


def strings(value: Any) -> list[Located]:
    if isinstance(value, Located):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings(item)]
    return []


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    both_text = isinstance(a, str) and isinstance(b, str)
    return (type(a) is type(b) or both_text) and a == b


@PROPERTY
@given(value=values, layout=layouts)
def test_parse_equals_json_loads_and_every_string_span_is_its_literal(
    value: Any, layout: dict[str, Any]
) -> None:
    text = "  " + json.dumps(value, **layout) + "\n"
    parsed, end = parse_value(text, 0)
    assert same(parsed, json.loads(text)) and parsed == json.loads(text)
    assert text[end:].strip() == ""
    for located in strings(parsed):
        assert json.loads(text[located.start : located.end]) == located


@PROPERTY
@given(value=values, layout=layouts, new=st.text())
def test_splicing_one_string_changes_only_that_literal(
    value: Any, layout: dict[str, Any], new: str
) -> None:
    text = json.dumps([value, "target"], **layout)
    parsed, _ = parse_value(text, 0)
    target = parsed[1]
    result = splice(text, [(target, new)], ensure_ascii=text.isascii())
    assert result[: target.start] == text[: target.start]
    assert json.loads(result) == [json.loads(text)[0], new]


@pytest.mark.parametrize("text, index", [
    ('{"a" 1}', 5), ("[1, 2", 5), ('{"a": tru}', 6), ("[1,]", 3), ('"\\x"', 1),
])
def test_errors_say_where(text: str, index: int) -> None:
    with pytest.raises(JSONSpanError) as caught:
        parse_value(text, 0)
    assert caught.value.index == index
