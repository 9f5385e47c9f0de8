"""The span-tracking JSON reader: the session dialect agrees with json.loads and locates every
string exactly; the configuration dialect reads JSONC, each name once, no NaN."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from _strategies import json_layouts as layouts
from _strategies import python_json_values as values
from toolcap.core._jsonspans import (
    JSONSpanError,
    JsonSyntaxError,
    Located,
    parse_value,
    parse_with_spans,
)

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])



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


@pytest.mark.parametrize("text, index", [
    ('{"a" 1}', 5), ("[1, 2", 5), ('{"a": tru}', 6), ("[1,]", 3), ('"\\x"', 1),
])
def test_errors_say_where(text: str, index: int) -> None:
    with pytest.raises(JSONSpanError) as caught:
        parse_value(text, 0)
    assert caught.value.index == index


def test_sessions_read_what_json_loads_reads_where_configurations_are_stricter() -> None:
    text = '{"a": NaN, "a": -Infinity}'
    parsed, _ = parse_value(text, 0)
    assert parsed == {"a": float("-inf")} == json.loads(text)
    with pytest.raises(JsonSyntaxError, match="column 7"):
        parse_with_spans('{"a": NaN}')
    with pytest.raises(JSONSpanError) as caught:
        parse_value("[1 /* a comment */]", 0)
    assert caught.value.index == 3


def test_hostile_nesting_in_a_session_is_an_error_not_a_crash() -> None:
    with pytest.raises(JSONSpanError, match="nested deeper than 400 levels"):
        parse_value("[" * 100_000 + "]" * 100_000, 0)
    with pytest.raises(JSONSpanError, match="nested deeper than 400 levels"):
        parse_value('{"a":' * 100_000 + "1" + "}" * 100_000, 0)
