"""keep_lines in a stream: the same bytes as the finalizer, in memory bounded by the limits."""

from __future__ import annotations

import gc
import re
import threading
import tracemalloc
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shell.test_stream import PROPERTY, assert_same, chunked, stream_through
from toolcap import Config, Policy, ToolResponse
from toolcap.core._keepstream import LineCollector
from toolcap.shell import _scanthread
from toolcap.shell._spill import open_stream
from toolcap.shell._stream import StreamCutter
from toolcap.store import MemoryStore

CASES = Path(__file__).parent.parent / "data" / "cuts"
LOGS = sorted(CASES.glob("keep_lines_*.in"))


def policy_for(threshold: int | None, ceiling: int | None = None, *, strategy: str = "head_tail",
               keep: list[str] | None = None, share: float = 0.25, spill: bool = True) -> Policy:
    tool: dict[str, object] = {"size_threshold": threshold, "strategy": strategy,
                               "keep_lines_share": share, "spill": spill}
    if keep is not None:
        tool["keep_lines"] = keep
    return Policy(Config(batch_ceiling=ceiling, tools={"t": tool}), sink=MemoryStore(),
                  notices=False)


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
@pytest.mark.parametrize("strategy", ["head_tail", "tail"])
def test_a_streamed_log_keeps_the_lines_the_finalizer_keeps_byte_for_byte(
    path: Path, chunk: int, strategy: str
) -> None:
    data = path.read_bytes()
    policy = policy_for(4096, strategy=strategy)
    outcome = stream_through(policy, data, list(range(chunk, len(data), chunk)))
    assert_same(outcome, data, policy_for(4096, strategy=strategy))
    assert outcome.result is not None and "lines of the cut part that match" in outcome.result.text


words = st.sampled_from([b"ok ", b"ok ", b"ok ", b"\n", b"\n", b"error: x\n", b"FAILED t\n",
                         b"panic: \xe6\xbc\xa2\n", b"exit status 3\n", b"\xff", b"\r\n",
                         b"Traceback (most recent call last):\n", b"y" * 300])


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    """Logs up to ~60 KB: ordinary lines, matching lines at random places, some invalid bytes."""
    unit = b"".join(draw(st.lists(words, min_size=1, max_size=40)))
    repeat = draw(st.integers(1, 60_000 // len(unit)))
    body = bytearray(unit * repeat)
    for at in draw(st.lists(st.integers(0, len(body)), max_size=12)):
        body[at:at] = draw(st.sampled_from([b"\nerror: here\n", b"\n2 failed, 3 passed\n",
                                            b"\nValueError: bad\n", b"\n" + b"e" * 5000]))
    return bytes(body)


@PROPERTY
@given(data=logs(), threshold=st.one_of(st.none(), st.integers(1024, 16384)),
       ceiling=st.one_of(st.none(), st.integers(1024, 16384)),
       strategy=st.sampled_from(["head_tail", "tail", "head"]),
       share=st.sampled_from([0.25, 0.05, 0.6, 1.0]),
       keep=st.sampled_from([None, [], [r"^\d+ failed", "here$"], ["(?i)VALUEERROR"]]),
       cuts=st.lists(st.integers(0, 70_000), max_size=10),
       thread_after=st.sampled_from([None, 0, 5000]))
def test_streamed_keep_lines_equal_the_finalizer_for_any_log_limit_and_chunking(
    data: bytes, threshold: int | None, ceiling: int | None, strategy: str, share: float,
    keep: list[str] | None, cuts: list[int], thread_after: int | None,
) -> None:
    # thread_after: the scan moves to its own thread from the start, or midway.
    policy = policy_for(threshold, ceiling, strategy=strategy, keep=keep, share=share)
    with mock.patch.object(_scanthread, "THREAD_AFTER",
                           _scanthread.THREAD_AFTER if thread_after is None else thread_after):
        outcome = stream_through(policy, data, cuts)
    assert_same(outcome, data, policy_for(threshold, ceiling, strategy=strategy, keep=keep,
                                          share=share))
    if outcome.result is not None:
        limit = min(x for x in (threshold, ceiling) if x is not None)
        assert outcome.result.kept_bytes == len(outcome.output) <= limit


def test_keep_lines_off_in_a_stream_gives_the_cut_of_before() -> None:
    data = (CASES / "keep_lines_cargo_build.in").read_bytes()
    off = stream_through(policy_for(4096, keep=[], spill=False), data, [1000, 5000])
    plain = StreamCutter(4096, ceiling=None)
    for chunk in chunked(data, [1000, 5000]):
        plain.feed(chunk)
    assert plain.close() == (True, "size_threshold")
    assert off.output == plain.result("size_threshold")[0].text.encode()


def test_a_long_streams_scan_thread_ends_with_the_stream_or_when_it_is_dropped() -> None:
    line = b"error: the same failure again and again, line after line\n"
    block = line * ((1 << 20) // len(line))
    before = {thread for thread in threading.enumerate() if thread.name == "toolcap-keep-lines"}
    with mock.patch.object(_scanthread, "THREAD_AFTER", 0):
        closed = open_stream(policy_for(8192, spill=False), "t")
        dropped = open_stream(policy_for(8192, spill=False), "t")
        for stream in (closed, dropped):
            stream.write(block)
    threads = {thread for thread in threading.enumerate()
               if thread.name == "toolcap-keep-lines"} - before
    assert len(threads) == 2
    assert closed.close().result is not None
    del stream, dropped  # never closed: collected, its finalizer ends the thread
    gc.collect()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()


def test_a_failure_of_the_scan_thread_reaches_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self: object, chunk: bytes, newlines: int | None = None) -> None:
        raise MemoryError("scan failed")

    with mock.patch.object(_scanthread, "THREAD_AFTER", 0):
        stream = open_stream(policy_for(8192, spill=False), "t")
        monkeypatch.setattr(LineCollector, "feed", fail)
        stream.write(b"error: x\n" * 1000)
    with pytest.raises(MemoryError, match="scan failed"):
        stream.close()


def test_matching_lines_of_a_long_stream_are_held_within_a_bound() -> None:
    # 6 MB in which every line matches: only the first lines that can be kept are
    # held, the others are counted, and memory stays that of the limits.
    line = b"error: the same failure again and again, line after line\n"
    block = line * ((1 << 20) // len(line))
    stream = open_stream(policy_for(8192, spill=False), "t")
    tracemalloc.start()
    try:
        for _ in range(6):
            stream.write(block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    outcome = stream.close()
    assert peak < (1 << 20)  # the chunk itself is the caller's; what is held is small
    assert outcome.result is not None and outcome.result.kept_bytes <= 8192
    (final,) = policy_for(8192, spill=False).finalize([ToolResponse("t", block * 6)])
    assert outcome.result.text == final.text
    # Every line matches: all but those in the head and the tail are counted.
    total = 6 * (len(block) // len(line))
    summary = re.search(r"\[toolcap: (\d+) of (\d+) lines of the cut part", final.text)
    assert summary is not None
    assert total - 8192 // len(line) <= int(summary.group(2)) < total
