"""Splicing: one located string replaced, every other character of the text kept."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcap.core._jsonspans import parse_value
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
