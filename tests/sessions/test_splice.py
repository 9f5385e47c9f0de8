"""Splicing: one located string replaced, every other character of the text kept."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import json_layouts as layouts
from _strategies import python_json_values as values
from toolcap.core._jsonspans import parse_value
from toolcap.sessions._repair import splice

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])



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
