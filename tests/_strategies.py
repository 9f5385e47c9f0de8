"""Hypothesis strategies shared by the property tests: text from all of Unicode."""

from __future__ import annotations

from hypothesis import strategies as st

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
