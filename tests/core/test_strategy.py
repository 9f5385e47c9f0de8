"""One cut engine: every strategy, and the one snapping rule, reach every cut.

The UTF-8 cut (``cap_text``, streams), the JSON cut on the wire, the collapse of
many parts and the store's partial artifacts all ask ``core/_strategy.py`` what
to keep; these tests hold each of them to it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap import Config, Policy, ToolResponse, cap_text
from toolcap.core._json import (
    DEFAULT_WIRE_MARKER,
    WIRE_CUT,
    json_size,
    project_json_text,
    wire_marker,
)
from toolcap.core._store_limits import PARTIAL_CUT, StoreLimits
from toolcap.core._strategy import STRATEGIES, CutPolicy, Snap, plan_parts, split_content
from toolcap.store import MemoryStore

LINES = "".join(f"line {i:05d} " + "x" * 40 + "\n" for i in range(2000))


def test_each_strategy_shares_a_budget_as_documented() -> None:
    assert split_content(1000, "head", 0.2) == (1000, 0)
    assert split_content(1000, "tail", 0.2) == (0, 1000)
    assert split_content(1000, "head_tail", 0.2) == (200, 800)
    assert split_content(1001, "head_tail", 0.5) == (500, 501)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_reaches_the_text_cut_the_wire_cut_and_the_collapse(
    strategy: str,
) -> None:
    keeps_head, keeps_tail = (share > 0 for share in split_content(100, strategy, 0.2))  # type: ignore[arg-type]
    first, last = LINES[:10], LINES.rstrip("\n")[-10:]

    text = cap_text(LINES, "4KB", strategy=strategy).text  # type: ignore[arg-type]
    wire = project_json_text(LINES, 4096, policy=CutPolicy(strategy, 0.2, None))  # type: ignore[arg-type]
    config = Config(tools={"*": {"size_threshold": "4KB", "strategy": strategy}})
    (collapsed,) = Policy(config, sink=None, notices=False).finalize(
        [ToolResponse("t", LINES.splitlines())])
    assert collapsed.merged is not None and collapsed.text is not None

    for out in (text, wire, collapsed.text):
        assert out.startswith(first) == keeps_head
        assert out.rstrip("\n").endswith(last) == keeps_tail
        assert "[toolcap:" in out


def test_the_wire_cut_by_default_keeps_a_fifth_for_the_head() -> None:
    assert (WIRE_CUT.strategy, WIRE_CUT.head_ratio, WIRE_CUT.snap) == ("head_tail", 0.2, None)
    out = project_json_text("a" * 100_000, 10_000)
    head = len(out) - len(out.lstrip("a"))
    tail = len(out) - len(out.rstrip("a"))
    assert head == (head + tail) // 5  # the room is all used, one byte a code point


def test_a_wire_cut_that_snaps_ends_its_head_and_starts_its_tail_on_a_line() -> None:
    policy = CutPolicy("head_tail", 0.2, Snap(window=1024, share=4))
    out = project_json_text(LINES, 8192, policy=policy)
    assert json_size(out) <= 8192
    head, _, rest = out.partition("\n[toolcap:")
    tail = rest.split("]\n", 1)[1]
    assert (head + "\n") in LINES and LINES.startswith(head + "\n")
    assert tail.startswith("line ") and LINES.endswith(tail)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=st.text(alphabet="ab\n", max_size=60), data=st.data())
def test_snapping_is_one_rule_for_str_and_bytes_and_never_empties_a_tail(
    text: str, data: st.DataObject
) -> None:
    snap = data.draw(st.sampled_from([Snap(8, 4), Snap(4096), Snap(3)]))
    position = data.draw(st.integers(0, len(text)))
    raw = text.encode()
    assert snap.head_break(text, position) == snap.head_break(raw, position)
    start = snap.tail_start(text, position)
    assert start == snap.tail_start(raw, position)
    assert position <= start and (start < len(text) or start == position)
    if start > position:
        assert text[start - 1] == "\n"


def test_the_store_cuts_partial_artifacts_with_the_same_engine() -> None:
    assert StoreLimits(max_artifact_size=4097).split() == PARTIAL_CUT.split(4097) == (2048, 2049)
    store = MemoryStore(limits=StoreLimits(max_artifact_size=2048))
    reference = store.put(LINES.encode())
    stored = store.read_bytes(reference)
    head_end = store.stat(reference).head_bytes
    assert head_end is not None and len(stored) <= 2048
    # Head and tail each end or start on a line: the line break stays once, at the cut.
    assert LINES.encode().startswith(stored[:head_end]) and stored[:head_end].endswith(b"\n")
    assert LINES.encode().endswith(stored[head_end:]) and stored[head_end:].startswith(b"line ")


def test_parts_kept_whole_follow_the_strategy() -> None:
    sizes = [9] * 100  # 10 bytes each with its line break
    assert plan_parts(sizes, 200, "head", 0.2) == (20, 100, 200)
    assert plan_parts(sizes, 200, "tail", 0.2) == (0, 80, 200)
    assert plan_parts(sizes, 200, "head_tail", 0.2) == (4, 84, 200)
    assert plan_parts(sizes, 10_000, "head", 0.2)[:2] == (99, 100)  # one part always goes


def test_the_wire_marker_names_its_artifact_in_its_where_field() -> None:
    reference = "toolcap:" + "0" * 32
    assert wire_marker([]) == DEFAULT_WIRE_MARKER
    named = wire_marker([reference])
    assert named.format(omitted="1 B", original="2 B", budget="3 B").endswith(
        f"wire limit; full text kept as {reference}]\n")
    # A template with no closing bracket still names it, where it asks.
    plain = wire_marker([reference], template="cut {omitted} of {original}{where} to {budget}")
    assert plain == f"cut {{omitted}} of {{original}}; full text kept as {reference} to {{budget}}"
    out = project_json_text("z" * 5000, 1024, marker=plain)
    assert f"; full text kept as {reference} to 1.0 KB" in out
    # Braces in a reference are text, never a field.
    assert "{x}" in wire_marker(["toolcap:{x}"]).format(omitted="", original="", budget="")


def test_a_wire_marker_without_a_where_field_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no \{where\} field"):
        wire_marker(["toolcap:" + "0" * 32], template="[cut {omitted} of {original}]")
