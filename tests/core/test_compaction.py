"""The pure compaction planner and the placeholder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _strategies import any_character
from toolcap.core._compaction import (
    SAMPLE_REFERENCE,
    Output,
    cut_marker_of,
    is_placeholder,
    plan_compaction,
    render_placeholder,
)
from toolcap.core._utf8 import is_valid, utf8_size

output_lists = st.lists(
    st.builds(Output, size=st.integers(0, 10_000), turn=st.integers(0, 5),
              placeholder=st.integers(100, 400), masked=st.booleans(), excluded=st.booleans()),
    max_size=30,
).map(lambda outs: sorted(outs, key=lambda o: o.turn))


@settings(deadline=None)
@given(outputs=output_lists, trigger=st.integers(0, 50_000), gap=st.integers(0, 50_000),
       keep_recent=st.integers(0, 20_000), unavailable=st.sets(st.integers(0, 29)))
def test_the_plan_masks_oldest_first_down_to_the_target_and_never_a_protected_output(
    outputs: list[Output], trigger: int, gap: int, keep_recent: int, unavailable: set[int]
) -> None:
    target = max(0, trigger - gap)
    plan = plan_compaction(outputs, trigger=trigger, target=target, keep_recent=keep_recent,
                           unavailable=frozenset(unavailable))
    assert plan.before == sum(o.size for o in outputs)
    if plan.before <= trigger:
        assert plan.mask == () and plan.after == plan.before
        return
    latest = max(o.turn for o in outputs)
    for index in plan.mask:
        chosen = outputs[index]
        assert not (chosen.masked or chosen.excluded or chosen.turn == latest)
        assert index not in unavailable and index not in plan.protected
        assert chosen.placeholder < chosen.size
    assert list(plan.mask) == sorted(plan.mask)
    assert plan.after == plan.before - sum(outputs[i].size - outputs[i].placeholder
                                           for i in plan.mask)
    if plan.after > target:  # only when every other output was out of reach
        rest = [i for i, o in enumerate(outputs) if i not in plan.mask and not o.masked
                and not o.excluded and i not in plan.protected and i not in unavailable
                and o.placeholder < o.size]
        assert rest == []
    else:  # no output was masked that was not needed to reach the target
        assert plan.after + (outputs[plan.mask[-1]].size - outputs[plan.mask[-1]].placeholder
                             ) > target if plan.mask else True


def test_keep_recent_protects_the_newest_outputs_that_fit_together() -> None:
    outputs = [Output(1000, 0, 10), Output(1000, 1, 10), Output(600, 2, 10),
               Output(300, 3, 10), Output(50, 4, 10)]
    plan = plan_compaction(outputs, trigger=0, target=0, keep_recent=1000)
    assert plan.protected == frozenset({2, 3, 4})
    assert plan.mask == (0, 1)


def test_without_latest_turn_protection_only_keep_recent_protects_the_newest() -> None:
    # A saved session whose last output broke it: that output is the one to mask.
    outputs = [Output(100, 0, 10), Output(5_000_000, 1, 10)]
    kept = plan_compaction(outputs, trigger=1000, target=1000, keep_recent=200)
    assert kept.mask == (0,) and kept.after > 1000
    saved = plan_compaction(outputs, trigger=1000, target=1000, keep_recent=200,
                            latest_turn=False)
    assert saved.protected == frozenset() and saved.mask == (0, 1) and saved.after == 20


def test_a_target_above_the_trigger_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be above"):
        plan_compaction([], trigger=10, target=20, keep_recent=0)


@settings(deadline=None)
@given(tool=st.text(any_character, max_size=300), text=st.text(any_character, max_size=2000),
       size=st.integers(0, 10**12), blocks=st.integers(0, 1000))
def test_a_placeholder_is_short_valid_one_marker_and_recognised(
    tool: str, text: str, size: int, blocks: int
) -> None:
    placeholder = render_placeholder(tool=tool, size=size, reference=SAMPLE_REFERENCE,
                                     text=text, blocks=blocks)
    assert is_valid(placeholder) and is_placeholder(placeholder)
    assert utf8_size(placeholder) <= 600
    assert placeholder.count("[") == 1 and placeholder.endswith("]")
    assert placeholder.count("]") == 1
    assert "read_artifact" in placeholder and SAMPLE_REFERENCE in placeholder


def test_the_cut_marker_of_a_capped_output_is_found() -> None:
    text = ("head\n[toolcap: output truncated, kept 31.8 KB of 3.2 MB; full output:"
            " toolcap:18c68655ed84064b77ff577ca9275d99. Narrow the query.]\ntail")
    assert cut_marker_of(text) == ("3.2 MB", "toolcap:18c68655ed84064b77ff577ca9275d99")
    assert cut_marker_of("[toolcap: output truncated, kept 1.0 KB of 2.0 KB. Narrow]") == (
        "2.0 KB", None)
    assert cut_marker_of("[toolcap: output truncated, kept " + "9" * 100_000) is None


def test_a_placeholder_of_four_byte_characters_stays_short() -> None:
    wide = "\U0001f600" * 300
    placeholder = render_placeholder(tool=wide, size=10**12, reference=SAMPLE_REFERENCE,
                                     text=wide, blocks=1000,
                                     cut_from=("1023.9 GB", SAMPLE_REFERENCE))
    assert is_valid(placeholder) and utf8_size(placeholder) <= 600
