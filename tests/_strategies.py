"""Hypothesis strategies shared by the property tests: text from all of Unicode."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from toolcap.core._json import dumps

#: Any code point, lone surrogates included.
any_character = st.one_of(
    st.characters(),
    st.characters(codec=None, categories=["Cs"]),
)

#: Characters that stress cuts: NUL, controls, line breaks, CJK, emoji, surrogates.
tricky_character = st.one_of(
    st.sampled_from(["\x00", "\n", "\r", "\t", '"', "\\", "\u2028", "\u2029", "\x7f"]),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),
    st.characters(codec=None, categories=["Cs"]),
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    any_character,
)


@st.composite
def large_text(draw: st.DrawFn, min_bytes: int = 0, max_bytes: int = 40_000) -> str:
    """A text of up to ``max_bytes`` UTF-8 bytes (roughly), built from a varied unit.

    The size is drawn first, so most examples are larger than the limits they meet.
    """
    unit = draw(st.text(alphabet=tricky_character, min_size=1, max_size=300))
    target = draw(st.integers(min_bytes, max_bytes))
    unit_bytes = len(unit.encode("utf-8", "surrogatepass"))
    tail = draw(st.text(alphabet=tricky_character, max_size=50))
    return unit * max(1, target // unit_bytes) + tail


limits = st.integers(min_value=1024, max_value=8192)


class Raw(str):
    """A number as the test writes it (every form JSON allows)."""


numbers = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["-0", "0.0", "1e5", "1E+5", "-2.5e-10", "0.000001", "1e400", "-1E-400",
                     "123456789012345678901234567890.5"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
).map(Raw)
keys = st.text(alphabet="abxyz~/_09", max_size=6)
short_strings = st.text(alphabet=tricky_character, max_size=30)
leaves = st.one_of(st.none(), st.booleans(), numbers, short_strings,
                   large_text(max_bytes=12_000))
json_documents = st.one_of(
    st.lists(st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=30), st.dictionaries(keys, inner, max_size=12)), max_leaves=80),
        min_size=1, max_size=400),
    st.dictionaries(keys, st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=200), st.dictionaries(keys, inner, max_size=12)),
        max_leaves=120), min_size=1, max_size=20),
)


def write_json(value: object, indent: str | None, depth: int = 0, ascii_only: bool = False) -> str:
    """A serializer of its own: numbers as drawn, strings valid UTF-8, any indent."""
    newline = "" if indent is None else "\n" + indent * (depth + 1)
    close = "" if indent is None else "\n" + indent * depth
    between = ", " if indent is None else "," + newline
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value) if ascii_only else dumps(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        members = [write_json(k, None) + ": " + write_json(v, indent, depth + 1, ascii_only)
                   for k, v in value.items()]
        return "{" + newline + between.join(members) + close + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return ("[" + newline + between.join(write_json(v, indent, depth + 1, ascii_only)
                                             for v in value) + close + "]")
    return json.dumps(value)


#: Any value json.loads returns (floats but NaN), with strings of any text.
python_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)
#: The layouts json.dumps writes: the keyword arguments of each.
json_layouts = st.sampled_from([
    {}, {"indent": 2}, {"indent": "\t"}, {"separators": (",", ":")},
    {"ensure_ascii": False}, {"indent": 1, "ensure_ascii": False},
])
