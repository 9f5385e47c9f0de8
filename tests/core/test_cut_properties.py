"""Properties of every cut, over all of Unicode: the bound, UTF-8, and nothing fabricated."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import large_text, limits
from toolcap import cap_text
from toolcap.core._cut import Strategy
from toolcap.core._utf8 import decode, sanitize

MARKER = re.compile(r"\[toolcap: output truncated, kept [^\]\n]* to see the rest\.\]")
PROPERTY = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
strategies = st.sampled_from(["head", "tail", "head_tail"])


def split_at_marker(text: str, strategy: Strategy) -> tuple[str, str]:
    """The head and tail around the marker of a cut text."""
    if strategy == "head":
        head, marker = text.rsplit("\n", 1)
        assert MARKER.fullmatch(marker)
        return head, ""
    if strategy == "tail":
        marker, tail = text.split("\n", 1)
        assert MARKER.fullmatch(marker)
        return "", tail
    found = MARKER.search(text)
    assert found is not None
    head, tail = text[: found.start()], text[found.end() :]
    assert head.endswith("\n") and tail.startswith("\n")
    return head[:-1], tail[1:]


@PROPERTY
@given(text=large_text(), limit=limits, strategy=strategies, snap=st.booleans())
def test_cut_text_never_exceeds_the_limit_and_always_encodes(
    text: str, limit: int, strategy: Strategy, snap: bool
) -> None:
    result = cap_text(text, limit, strategy=strategy, snap_lines=snap)
    encoded = result.text.encode("utf-8")  # raises if a surrogate survived
    assert len(encoded) <= limit
    assert result.kept_bytes == len(encoded)


@PROPERTY
@given(text=large_text(), limit=limits, strategy=strategies, snap=st.booleans())
def test_cut_keeps_only_a_prefix_and_a_suffix_of_the_input(
    text: str, limit: int, strategy: Strategy, snap: bool
) -> None:
    result = cap_text(text, limit, strategy=strategy, snap_lines=snap)
    clean = sanitize(text)
    if not result.truncated:
        assert result.text == clean
        assert MARKER.search(result.text) is None or MARKER.search(clean) is not None
        return
    head, tail = split_at_marker(result.text, strategy)
    assert clean.startswith(head)
    assert clean.endswith(tail)
    assert len(head.encode()) + len(tail.encode()) < len(clean.encode())


@PROPERTY
@given(data=st.binary(min_size=0, max_size=20000), limit=limits, strategy=strategies)
def test_bytes_cut_is_bounded_and_taken_from_the_decoded_input(
    data: bytes, limit: int, strategy: Strategy
) -> None:
    result = cap_text(data, limit, strategy=strategy)
    assert len(result.text.encode("utf-8")) <= limit
    assert result.original_bytes == len(data)
    full = decode(data)
    if not result.truncated:
        assert result.text == full
        return
    head, tail = split_at_marker(result.text, strategy)
    assert full.startswith(head)
    assert full.endswith(tail)


@PROPERTY
@given(text=large_text(), limit=limits, strategy=strategies)
def test_a_marker_appears_exactly_when_the_text_was_cut(
    text: str, limit: int, strategy: Strategy
) -> None:
    result = cap_text(text, limit, strategy=strategy)
    assert result.truncated == (len(sanitize(text).encode()) > limit)
    assert bool(MARKER.search(result.text)) == result.truncated


@PROPERTY
@given(text=large_text(), limit=limits, strategy=strategies)
def test_capping_twice_equals_capping_once(text: str, limit: int, strategy: Strategy) -> None:
    once = cap_text(text, limit, strategy=strategy)
    twice = cap_text(once.text, limit, strategy=strategy)
    assert twice.text is once.text
    assert not twice.truncated
