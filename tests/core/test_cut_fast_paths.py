"""The fast paths of a cut of ``bytes`` give what the plain computations they replace give."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import large_text, limits
from toolcap import cap_text, human_size
from toolcap.core._cut import Strategy, plan_cut, split_content
from toolcap.core._marker import Marker
from toolcap.core._refs import REFERENCE_LENGTH
from toolcap.core._strategy import LINE_SNAP, Snap
from toolcap.core._utf8 import head_boundary, tail_boundary

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
strategies = st.sampled_from(["head", "tail", "head_tail"])


def _continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def walked_head_boundary(data: bytes, end: int) -> int:
    """head_boundary as a walk back over continuation bytes, without a shortcut."""
    end = max(0, min(end, len(data)))
    position = end
    while position > max(0, end - 3) and position < len(data) and _continuation(data[position]):
        position -= 1
    if position < len(data) and _continuation(data[position]):
        return end
    return position


def walked_tail_boundary(data: bytes, start: int) -> int:
    """tail_boundary as a walk forward over continuation bytes, without a shortcut."""
    start = max(0, min(start, len(data)))
    position = start
    while position < min(len(data), start + 3) and _continuation(data[position]):
        position += 1
    if position < len(data) and _continuation(data[position]):
        return start
    return position


def looped_human_size(n: int) -> str:
    """human_size as a loop over the units."""
    if n < 1024:
        return f"{n} B"
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= scale:
            tenths = n * 10 // scale
            return f"{tenths // 10}.{tenths % 10} {unit}"
    raise AssertionError("unreachable")


@PROPERTY
@given(data=st.binary(max_size=64), position=st.integers(min_value=-4, max_value=70))
def test_character_boundaries_equal_the_plain_walk(data: bytes, position: int) -> None:
    assert head_boundary(data, position) == walked_head_boundary(data, position)
    assert tail_boundary(data, position) == walked_tail_boundary(data, position)


@PROPERTY
@given(n=st.integers(min_value=0, max_value=1 << 45)
       | st.sampled_from([1023, 1024, 1 << 20, (1 << 20) - 1, 1 << 30, (1 << 30) - 1]))
def test_human_size_equals_the_loop_over_units(n: int) -> None:
    assert human_size(n) == looped_human_size(n)


@PROPERTY
@given(limit=limits, strategy=strategies, ratio=st.floats(0.01, 0.99),
       reference=st.none() | st.text("abcdef:-日😀", max_size=80), stored=st.booleans())
def test_a_cached_plan_equals_the_plan_computed_afresh(
    limit: int, strategy: Strategy, ratio: float, reference: str | None, stored: bool
) -> None:
    plan = plan_cut(limit, strategy=strategy, head_ratio=ratio, stored=stored,
                    reference=reference)
    assert plan_cut(limit, strategy=strategy, head_ratio=ratio, stored=stored,
                    reference=reference) is plan
    reference_length = (len(reference.encode("utf-8")) if reference is not None
                        else REFERENCE_LENGTH if stored else 0)
    content = limit - Marker().reserve(reference_length) - (2 if strategy == "head_tail" else 1)
    expected = split_content(content, strategy, ratio) if content > 0 else (0, 0)
    assert (plan.head, plan.tail) == expected


@PROPERTY
@given(text=large_text(), limit=limits, strategy=strategies, snap=st.booleans())
def test_a_cut_of_utf8_bytes_equals_the_cut_of_their_text(
    text: str, limit: int, strategy: Strategy, snap: bool
) -> None:
    data = text.encode("utf-8", "replace")
    assert cap_text(data, limit, strategy=strategy, snap_lines=snap) == cap_text(
        data.decode("utf-8"), limit, strategy=strategy, snap_lines=snap)


def test_a_marker_with_dropped_prints_what_was_cut() -> None:
    marker = Marker.parse("[cut {dropped} of {original}]")
    rendered = marker.render(original=10 << 20, kept=1 << 20, reference=None)
    assert rendered == "[cut 9.0 MB of 10.0 MB]"
    assert Marker.parse("[cut of {original}]").render(
        original=2048, kept=1024, reference=None) == "[cut of 2.0 KB]"


bytes_inputs = st.one_of(
    large_text(min_bytes=1024).map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.binary(min_size=1024, max_size=20_000),
    st.builds(lambda line, n: line * n, st.binary(min_size=1, max_size=200),
              st.integers(1, 400)),
)


@PROPERTY
@given(data=bytes_inputs, limit=limits,
       reference=st.sampled_from([None, "toolcap:" + "ab" * 16, "toolcap:ü"]))
def test_the_default_cut_of_bytes_is_the_general_cut(
    data: bytes, limit: int, reference: str | None
) -> None:
    from toolcap.core._cut import cut

    assert cap_text(data, limit, reference=reference) == cut(data, limit, reference=reference)


@PROPERTY
@given(template=st.lists(st.sampled_from(
           ["{kept}", "{original}", "{dropped}", "{where}", "{reference}", "{kept!r}",
            "{original!a}", "{{", "}}", "{", "}", "{0}", "{kept:>9}", "[toolcap: ", "ü", " ",
            "%", "%s", "%%(kept)d"]),
           max_size=8).map("".join),
       original=st.integers(0, 10**12), kept=st.integers(0, 10**6),
       reference=st.sampled_from([None, "toolcap:" + "ab" * 16]))
def test_a_marker_renders_as_its_template_formatted_by_keyword(
    template: str, original: int, kept: int, reference: str | None
) -> None:
    from hypothesis import assume

    from toolcap import ConfigError

    try:
        marker = Marker.parse(template)
    except ConfigError:
        assume(False)
        return
    values = {"original": human_size(original), "kept": human_size(kept),
              "dropped": human_size(max(0, original - kept)),
              "where": f"; full output: {reference}" if reference else "",
              "reference": reference or ""}
    assert marker.render(original=original, kept=kept, reference=reference) == template.format(
        **values)


@PROPERTY
@given(data=st.binary(max_size=3000).map(lambda raw: raw.replace(b"x", b"\n")),
       head=st.integers(0, 3000), tail=st.integers(0, 3000),
       snap=st.sampled_from([LINE_SNAP, Snap(window=16), Snap(window=64, share=2)]))
def test_both_snaps_at_once_equal_the_head_and_the_tail_snapped_apart(
    data: bytes, head: int, tail: int, snap: Snap
) -> None:
    head, tail = min(head, len(data)), min(tail, len(data))
    at = snap.head_break(data, head)
    assert snap.both(data, head, tail) == ((head if at < 0 else at), snap.tail_start(data, tail))


@PROPERTY
@given(data=st.binary(max_size=9000) | large_text(max_bytes=9000).map(
           lambda text: text.encode("utf-8", "surrogatepass")),
       limit=limits)
def test_bytes_that_fit_are_returned_as_the_general_cut_returns_them(
    data: bytes, limit: int
) -> None:
    from toolcap.core._cut import cut

    assert cap_text(data, limit) == cut(data, limit)
