"""The finalization seam: thresholds, the batch ceiling, spilling once, notices, the guard."""

from __future__ import annotations

import io
import logging
import re

import pytest

from toolcap import Config, FinalizedResponse, Policy, ToolResponse, human_size
from toolcap.store import MemoryStore

KB = 1024


class BrokenSink:
    """A store whose every write fails, as a full or read-only one does."""

    def __init__(self) -> None:
        self.attempts = 0

    def put(self, data: bytes, *, tool: str | None = None) -> str:
        self.attempts += 1
        raise OSError(28, "No space left on device")


def make_policy(
    config: Config | None = None, *, sink: object = None, notices: bool = True
) -> tuple[Policy, io.StringIO]:
    stderr = io.StringIO()
    policy = Policy(config or Config(), sink=sink, notices=notices, stderr=stderr)  # type: ignore[arg-type]
    return policy, stderr


def sizes(results: list[FinalizedResponse]) -> list[int]:
    return [result.delivered_bytes for result in results]


def test_responses_within_their_threshold_come_back_unchanged() -> None:
    policy, stderr = make_policy()
    texts = ["short", "x" * (32 * KB)]
    results = policy.finalize([ToolResponse("Read", text) for text in texts])
    for text, result in zip(texts, results, strict=True):
        assert result.text is text
        assert result.capped_by is None
        assert result.artifacts is None
    assert stderr.getvalue() == ""


def test_a_response_over_its_threshold_is_cut_and_its_original_stored() -> None:
    store = MemoryStore()
    policy, stderr = make_policy(sink=store)
    original = "".join(f"line {i}\n" for i in range(20000))
    (result,) = policy.finalize([ToolResponse("Bash", original, call_id="c1")])
    assert result.capped_by == "size_threshold"
    assert result.delivered_bytes <= 32 * KB
    assert len(result.text.encode()) == result.delivered_bytes  # type: ignore[union-attr]
    assert result.original_bytes == len(original)
    (reference,) = result.artifacts  # type: ignore[misc]
    assert re.fullmatch(r"toolcap:[0-9a-f]{32}", reference)
    assert reference in result.text  # type: ignore[operator]
    assert store.read_bytes(reference, 0, len(original)) == original.encode()
    assert stderr.getvalue() == (
        f"Bash: sent {human_size(result.delivered_bytes)} of {human_size(len(original))}"
        " to the assistant (size_threshold)\n"
    )


def test_the_notice_line_is_exact() -> None:
    policy, stderr = make_policy(Config(tools={"*": {"size_threshold": 256 * KB}}))
    (result,) = policy.finalize([ToolResponse("fs_list_files", "a" * 3250586)])
    assert 255 * KB < result.delivered_bytes <= 256 * KB
    assert stderr.getvalue() == (
        f"fs_list_files: sent {human_size(result.delivered_bytes)} of 3.1 MB to the assistant"
        " (size_threshold)\n"
    )


def test_each_cap_also_logs_a_warning_even_with_stderr_notices_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy, stderr = make_policy(notices=False)
    with caplog.at_level(logging.WARNING, logger="toolcap"):
        policy.finalize([ToolResponse("Grep", "g" * 100 * KB)])
    assert stderr.getvalue() == ""
    assert [record.getMessage() for record in caplog.records] == [
        "Grep: sent 31.9 KB of 100.0 KB to the assistant (size_threshold)"
    ]
    assert caplog.records[0].levelno == logging.WARNING


def test_per_tool_configuration_selects_threshold_and_strategy() -> None:
    config = Config.from_mapping(
        {
            "tools": {
                "*": {"size_threshold": "4KB"},
                "Read": {"size_threshold": "8KB", "strategy": "head"},
                "Grep": "2KB",
            }
        }
    )
    policy, _ = make_policy(config)
    text = "".join(f"{i:06d}\n" for i in range(5000))
    read, grep, other = policy.finalize(
        [ToolResponse("Read", text), ToolResponse("Grep", text), ToolResponse("Glob", text)]
    )
    assert 7 * KB < read.delivered_bytes <= 8 * KB
    assert read.text.startswith("000000\n") and read.text.endswith("the rest.]")  # type: ignore[union-attr]
    assert grep.delivered_bytes <= 2 * KB
    assert grep.text.endswith("004999\n")  # type: ignore[union-attr]
    assert 3 * KB < other.delivered_bytes <= 4 * KB


def test_content_none_is_skipped_and_errors_are_capped_like_any_response() -> None:
    policy, _ = make_policy()
    empty, error = policy.finalize(
        [ToolResponse("Noop", None), ToolResponse("cargo_test", "E" * 500 * KB, is_error=True)]
    )
    assert empty.parts is None and empty.capped_by is None and empty.delivered_bytes == 0
    assert error.is_error and error.capped_by == "size_threshold"
    assert error.delivered_bytes <= 32 * KB


def test_batch_total_stays_within_the_ceiling_and_no_response_grows() -> None:
    policy, _ = make_policy(Config(batch_ceiling=64 * KB))
    texts = ["a" * 30 * KB, "b" * 31 * KB, "c" * 2 * KB, "d" * 29 * KB]
    results = policy.finalize([ToolResponse(f"t{i}", t) for i, t in enumerate(texts)])
    assert sum(sizes(results)) <= 64 * KB
    for text, result in zip(texts, results, strict=True):
        assert result.delivered_bytes <= len(text)
    assert results[2].text == texts[2]  # the small one is whole
    assert [r.capped_by for r in results] == ["batch_ceiling", "batch_ceiling", None,
                                              "batch_ceiling"]


def test_a_small_response_stays_whole_when_a_large_sibling_absorbs_the_cut() -> None:
    policy, _ = make_policy(Config(batch_ceiling=40 * KB, tools={"*": {"size_threshold": None}}))
    small, large = policy.finalize(
        [ToolResponse("Small", "s" * 5 * KB), ToolResponse("Large", "L" * 500 * KB)]
    )
    assert small.text == "s" * 5 * KB and small.capped_by is None
    assert large.capped_by == "batch_ceiling"
    assert small.delivered_bytes + large.delivered_bytes <= 40 * KB
    assert large.delivered_bytes > 34 * KB


def test_responses_each_under_threshold_but_together_over_the_ceiling_are_cut() -> None:
    policy, stderr = make_policy(Config(batch_ceiling=64 * KB))
    results = policy.finalize([ToolResponse(f"Read{i}", "r" * 30 * KB) for i in range(4)])
    assert sum(sizes(results)) <= 64 * KB
    assert all(r.capped_by == "batch_ceiling" for r in results)
    assert stderr.getvalue().count("(batch_ceiling)\n") == 4


def test_one_response_over_the_ceiling_with_an_unlimited_threshold_is_cut() -> None:
    config = Config.from_mapping({"batch_ceiling": "256KB", "tools": {"*": "unlimited"}})
    policy, stderr = make_policy(config)
    (result,) = policy.finalize([ToolResponse("cargo_expand", "x" * 3 * 1024 * KB)])
    assert result.capped_by == "batch_ceiling"
    assert result.delivered_bytes <= 256 * KB
    assert stderr.getvalue().endswith("of 3.0 MB to the assistant (batch_ceiling)\n")


def test_the_ceiling_is_deterministic_and_breaks_ties_by_position() -> None:
    policy, _ = make_policy(Config(batch_ceiling=10 * KB + 1))
    batch = [ToolResponse(name, "z" * 20 * KB) for name in ("first", "second")]
    once = policy.finalize(batch)
    again = policy.finalize(batch)
    assert once == again
    assert once[0].delivered_bytes <= 5 * KB + 1
    assert once[1].delivered_bytes <= 5 * KB


def test_finalizing_a_finalized_batch_changes_nothing() -> None:
    store = MemoryStore()
    policy, _ = make_policy(Config(batch_ceiling=48 * KB), sink=store)
    batch = [ToolResponse("A", "α" * 40 * KB), ToolResponse("B", "b" * 10 * KB, is_error=True)]
    first = policy.finalize(batch)
    writes = store.writes
    second = policy.finalize([result.as_response() for result in first])
    assert [r.text for r in second] == [r.text for r in first]
    assert all(r.capped_by is None for r in second)
    assert [r.artifacts for r in second] == [r.artifacts for r in first]
    assert store.writes == writes


def test_a_response_cut_by_both_caps_is_stored_once() -> None:
    store = MemoryStore()
    policy, _ = make_policy(Config(batch_ceiling=40 * KB), sink=store)
    results = policy.finalize(
        [ToolResponse("A", "a" * 100 * KB), ToolResponse("B", "b" * 100 * KB)]
    )
    assert [r.capped_by for r in results] == ["batch_ceiling", "batch_ceiling"]
    assert store.writes == 2
    for result in results:
        (reference,) = result.artifacts  # type: ignore[misc]
        assert result.text.count(reference) == 1  # type: ignore[union-attr]
        assert result.text.count("[toolcap:") == 1  # type: ignore[union-attr]


def test_a_response_the_producer_already_stored_is_not_stored_again() -> None:
    store = MemoryStore()
    policy, _ = make_policy(sink=store)
    reference = "toolcap:" + "ab" * 16
    (result,) = policy.finalize([ToolResponse("Bash", "x" * 64 * KB, artifacts=(reference,))])
    assert store.writes == 0
    assert result.artifacts == (reference,)
    assert reference in result.text  # type: ignore[operator]


def test_a_store_failure_still_bounds_the_response_without_a_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = BrokenSink()
    policy, stderr = make_policy(Config(batch_ceiling=40 * KB), sink=sink)
    with caplog.at_level(logging.WARNING, logger="toolcap"):
        (result,) = policy.finalize([ToolResponse("Read", "r" * 100 * KB)])
    assert result.delivered_bytes <= 32 * KB
    assert "toolcap:" not in result.text.replace("[toolcap:", "")  # type: ignore[union-attr]
    assert result.artifacts == ()
    assert result.not_kept == "No space left on device"
    assert sink.attempts == 1
    assert stderr.getvalue().endswith(
        "(size_threshold); the full output could not be kept (No space left on device)\n"
    )
    assert any("could not keep" in record.getMessage() for record in caplog.records)


def test_without_a_store_a_cut_records_that_nothing_was_stored() -> None:
    policy, stderr = make_policy(sink=None)
    (result,) = policy.finalize([ToolResponse("Read", "r" * 100 * KB)])
    assert result.artifacts == ()
    assert result.not_kept is None
    assert "could not be kept" not in stderr.getvalue()


def test_spill_off_for_a_tool_stores_nothing() -> None:
    store = MemoryStore()
    config = Config.from_mapping({"tools": {"Secret": {"spill": False}}})
    policy, _ = make_policy(config, sink=store)
    (result,) = policy.finalize([ToolResponse("Secret", "s" * 100 * KB)])
    assert store.writes == 0 and result.artifacts == ()


def test_the_guard_bounds_without_any_io(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    policy, stderr = make_policy(sink=store)
    with caplog.at_level(logging.DEBUG, logger="toolcap"):
        (result,) = policy.guard([ToolResponse("Read", "r" * 100 * KB)])
    assert result.capped_by == "size_threshold"
    assert result.delivered_bytes <= 32 * KB
    assert store.writes == 0
    assert stderr.getvalue() == ""
    assert caplog.records == []


def test_the_guard_returns_an_already_bounded_batch_unchanged() -> None:
    policy, _ = make_policy(sink=MemoryStore())
    first = policy.finalize([ToolResponse("A", "a" * 100 * KB), ToolResponse("B", "b")])
    guarded = policy.guard([result.as_response() for result in first])
    assert [g.text for g in guarded] == [f.text for f in first]
    assert all(g.capped_by is None for g in guarded)


def test_parts_keep_their_number_and_order_and_share_the_budget() -> None:
    policy, _ = make_policy(Config(tools={"*": {"size_threshold": "8KB"}}))
    parts = ["p" * 20 * KB, "tiny", "q" * 20 * KB]
    (result,) = policy.finalize([ToolResponse("mcp_tool", parts)])
    assert result.parts is not None and len(result.parts) == 3
    assert result.parts[1] == "tiny"
    assert result.parts[0].startswith("p") and result.parts[2].startswith("q")
    assert result.delivered_bytes <= 8 * KB
    first, _, last = (len(p.encode()) for p in result.parts)
    assert abs(first - last) <= 1


def test_bytes_content_is_decoded_with_replacement_characters() -> None:
    policy, _ = make_policy()
    small, large = policy.finalize(
        [ToolResponse("a", b"ok \xff"), ToolResponse("b", b"\xfe" * 40 * KB)]
    )
    assert small.text == "ok \ufffd"
    assert large.delivered_bytes <= 32 * KB
    assert large.original_bytes == 40 * KB


def test_lone_surrogates_never_reach_the_delivered_text() -> None:
    policy, _ = make_policy()
    (result,) = policy.finalize([ToolResponse("a", "x\ud800y")])
    assert result.text == "x\ufffdy"


def test_configured_tools_the_caller_never_uses_are_a_warning_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = Config.from_mapping({"tools": {"Read": "8KB", "Ghost": "8KB"}})
    with caplog.at_level(logging.WARNING, logger="toolcap"):
        Policy(config, sink=None, known_tools=["Read", "Bash"])
    assert [r.getMessage() for r in caplog.records] == [
        "configuration names tool 'Ghost', which is not in use"
    ]


def test_many_small_parts_collapse_under_one_marker_and_one_artifact() -> None:
    store = MemoryStore()
    policy, _ = make_policy(sink=store)
    blocks = [f"block {i:03d} " + "x" * 90 + "\n" for i in range(500)]
    (result,) = policy.finalize([ToolResponse("mcp_tool", blocks)])
    assert result.parts is not None
    assert result.delivered_bytes <= 32 * KB
    # head_tail: whole parts first (about a fifth of the budget) and last, one
    # part between them holding the marker in place of all the middle ones.
    (middle,) = [i for i, part in enumerate(result.parts) if "[toolcap: output truncated" in part]
    head, tail = list(result.parts[:middle]), list(result.parts[middle + 1 :])
    assert head == blocks[: len(head)] and tail == blocks[len(blocks) - len(tail) :]
    assert 0 < len(head) < len(tail)
    (reference,) = result.artifacts  # type: ignore[misc]
    assert store.writes == 1
    rest = "\n".join(blocks[len(head) : len(blocks) - len(tail)]).encode()
    assert store.read_bytes(reference, 0, len(rest) + 10) == rest


def test_a_head_policy_collapses_parts_after_a_prefix_kept_whole() -> None:
    config = Config(tools={"*": {"strategy": "head"}})
    policy, _ = make_policy(config, sink=MemoryStore())
    blocks = [f"block {i:03d} " + "x" * 90 + "\n" for i in range(500)]
    (result,) = policy.finalize([ToolResponse("mcp_tool", blocks)])
    assert result.parts is not None and result.delivered_bytes <= 32 * KB
    *whole, last = result.parts
    assert whole == blocks[: len(whole)] and len(whole) > 250
    assert "[toolcap: output truncated" in last


def test_the_joined_text_of_several_parts_stays_within_the_bound() -> None:
    config = Config(tools={"*": {"size_threshold": "1KB", "marker": "[cut]", "strategy": "head"}})
    policy, _ = make_policy(config)
    (result,) = policy.finalize([ToolResponse("t", ["a" * 2000, "b" * 2000])])
    assert result.text is not None
    assert len(result.text.encode()) == result.delivered_bytes <= 1024


class LongReferenceSink:
    """A store that answers with a URL rather than a short reference."""

    def put(self, data: bytes, *, tool: str | None = None) -> str:
        return "s3://a-bucket/" + "k" * 200


def test_a_reference_too_long_for_a_marker_is_not_named_and_the_bound_holds() -> None:
    policy, stderr = make_policy(sink=LongReferenceSink())
    (result,) = policy.finalize([ToolResponse("Read", "r" * 100 * KB)])
    assert result.delivered_bytes <= 32 * KB
    assert "s3://" not in result.text  # type: ignore[operator]
    assert result.artifacts == ()
    assert "unusable reference" in stderr.getvalue()


def test_a_producer_reference_too_long_for_a_marker_is_recorded_but_not_named() -> None:
    policy, _ = make_policy(Config(tools={"*": {"size_threshold": "1KB"}}))
    long_reference = "file:///" + "p" * 300
    (result,) = policy.finalize([ToolResponse("Read", "r" * 5000, artifacts=(long_reference,))])
    assert result.delivered_bytes <= 1024
    assert result.artifacts == (long_reference,)
    assert long_reference not in result.text  # type: ignore[operator]


def test_a_hundred_thousand_parts_stay_within_the_threshold_with_a_marker() -> None:
    # Past 32,768 parts the newlines that join them alone exceed 32 KB.
    store = MemoryStore()
    policy, _ = make_policy(sink=store)
    (result,) = policy.finalize([ToolResponse("t", ["x"] * 100_000)])
    assert result.text is not None and result.parts is not None
    assert len(result.text.encode()) == result.delivered_bytes <= 32 * KB
    assert result.capped_by == "size_threshold"
    (reference,) = result.artifacts  # type: ignore[misc]
    assert f"full output: {reference}" in result.text
    # Whole parts, one part holding the marker, whole parts: the middle ones are one.
    (middle,) = [i for i, part in enumerate(result.parts) if part != "x"]
    dropped = 100_000 - (len(result.parts) - 1)
    rest = "\n".join(["x"] * dropped).encode()
    assert store.read_bytes(reference, 0, len(rest) + 10) == rest
    assert 0 < middle < len(result.parts) - 1


def test_many_empty_parts_are_cut_when_their_newlines_exceed_the_threshold() -> None:
    policy, _ = make_policy(sink=MemoryStore())
    (result,) = policy.finalize([ToolResponse("t", [""] * 40_000)])
    assert result.text is not None
    assert len(result.text.encode()) == result.delivered_bytes <= 32 * KB
    assert "[toolcap: output truncated" in result.text
    assert result.artifacts


def test_the_guard_bounds_a_hundred_thousand_parts_too() -> None:
    policy, _ = make_policy()
    (result,) = policy.guard([ToolResponse("t", ["x"] * 100_000)])
    assert result.text is not None
    assert len(result.text.encode()) == result.delivered_bytes <= 32 * KB
    assert "[toolcap: output truncated" in result.text


def test_aligned_maps_the_delivered_parts_back_to_the_input_parts() -> None:
    policy, _ = make_policy(Config(tools={"*": {"size_threshold": "1KB"}}), sink=MemoryStore())
    parts = [f"{i:02d}" + "y" * 40 for i in range(200)]
    (result,) = policy.finalize([ToolResponse("t", parts)])
    assert result.merged is not None and result.parts is not None
    start, end = result.merged
    aligned = result.aligned()
    assert len(aligned) == len(parts)
    assert aligned[start] == result.parts[start] and "[toolcap:" in result.parts[start]
    assert aligned[start + 1 : end] == [None] * (end - start - 1)
    assert aligned[:start] == parts[:start] and aligned[end:] == parts[end:]
