"""JSON Lines in a stream: cut by whole lines, exactly as the finalizer cuts them."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from core.test_jsonlines import MARKER, json_lines
from shell.test_stream import PROPERTY, assert_same, stream_through
from toolcap import Config, Policy
from toolcap.store import MemoryStore


def policy_for(threshold: int | None, ceiling: int | None, strategy: str, fmt: str) -> Policy:
    tool = {"size_threshold": threshold, "strategy": strategy, "format": fmt}
    return Policy(Config(batch_ceiling=ceiling, tools={"t": tool}), sink=MemoryStore(),
                  notices=False)


@PROPERTY
@given(text=json_lines(), threshold=st.one_of(st.none(), st.integers(1024, 8192)),
       ceiling=st.one_of(st.none(), st.integers(1024, 8192)),
       strategy=st.sampled_from(["head_tail", "tail", "head"]),
       fmt=st.sampled_from(["auto", "json", "text"]),
       cuts=st.lists(st.integers(0, 40_000), max_size=8))
def test_a_streamed_json_lines_text_is_cut_as_the_finalizer_cuts_it(
    text: str, threshold: int | None, ceiling: int | None, strategy: str, fmt: str,
    cuts: list[int],
) -> None:
    data = text.encode("utf-8")
    outcome = stream_through(policy_for(threshold, ceiling, strategy, fmt), data, cuts)
    assert_same(outcome, data, policy_for(threshold, ceiling, strategy, fmt))


def test_a_streamed_export_keeps_whole_records() -> None:
    data = b"".join(json.dumps({"id": n, "pad": "p" * (n % 50)}).encode() + b"\n"
                    for n in range(20_000))
    outcome = stream_through(policy_for(4096, None, "head_tail", "auto"), data,
                             list(range(333, len(data), 4093)))
    assert outcome.result is not None
    for line in outcome.result.text.split("\n"):
        if line and not line.startswith(MARKER):
            json.loads(line)
