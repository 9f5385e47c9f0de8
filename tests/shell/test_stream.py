"""The stream cutter gives exactly what the finalizer gives for the same bytes."""

from __future__ import annotations

import itertools
import json
import logging
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import json_documents, write_json
from helpers import reference_of
from toolcap import Config, Policy, StoreError, ToolResponse, human_size
from toolcap.shell._capstream import CapStream, StreamOutcome
from toolcap.shell._spill import open_stream
from toolcap.shell._stream import StreamCutter
from toolcap.store import MemoryStore, _lineindex

PROPERTY = settings(max_examples=400, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Pieces that stress a byte stream: invalid UTF-8, split code points, line breaks, NUL.
pieces = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "replace")),
    st.sampled_from([b"\n", b"\r\n", b"\x00", b"\xff", b"\xe2\x82", b"\xac", b"\xf0\x9f\x98\x80",
                     b"\xed\xa0\x80", "é".encode(), "漢字\n".encode()]),
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Byte strings of up to ~20 KB, most of them larger than the limits they meet."""
    unit = b"".join(draw(st.lists(pieces, min_size=1, max_size=12)))
    repeat = draw(st.integers(1, 20_000 // max(1, len(unit))))
    return unit * repeat + b"".join(draw(st.lists(pieces, max_size=4)))


limits = st.one_of(st.none(), st.integers(1024, 8192))


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(len(data), c) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def config_for(threshold: int | None, ceiling: int | None, strategy: str, ratio: float,
               spill: bool = True) -> Config:
    tool = {"size_threshold": threshold, "strategy": strategy, "head_ratio": ratio,
            "spill": spill}
    return Config(batch_ceiling=ceiling, tools={"t": tool})


def write_through(stream: CapStream, data: bytes, cuts: list[int]) -> bytes:
    """Feed ``data`` in chunks as the command line does: what it writes before the end."""
    written = []
    for chunk in chunked(data, cuts):
        if stream.passthrough:
            written.append(chunk)
        else:
            stream.write(chunk)
            written.append(stream.release())
    return b"".join(written)


def stream_through(policy: Policy, data: bytes, cuts: list[int]) -> StreamOutcome:
    """Feed ``data`` in chunks, as the command line does (which writes through when unlimited)."""
    stream = open_stream(policy, "t")
    written = write_through(stream, data, cuts)
    outcome = stream.close()
    if stream.passthrough:
        return StreamOutcome(written, None, None, outcome.original_bytes)
    return outcome


def assert_same(outcome: StreamOutcome, data: bytes, policy: Policy) -> None:
    if policy.for_tool("t").size_threshold is None and policy.config.batch_ceiling is None:
        # Unlimited: the command line writes the stream through untouched, binary or not.
        assert outcome.passthrough == data and outcome.result is None
        return
    (final,) = policy.finalize([ToolResponse("t", data)])
    if final.capped_by is None:
        assert outcome.result is None
        assert outcome.passthrough == data
        return
    assert outcome.result is not None
    assert outcome.result.text == final.text
    assert outcome.result.kept_bytes == final.delivered_bytes
    assert outcome.capped_by == final.capped_by
    assert outcome.original_bytes == final.original_bytes == len(data)
    assert outcome.reference == (final.artifacts[0] if final.artifacts else None)
    assert outcome.not_kept == final.not_kept


@PROPERTY
@given(data=streams(), threshold=limits, ceiling=limits,
       strategy=st.sampled_from(["head", "tail", "head_tail"]),
       ratio=st.sampled_from([0.2, 0.5, 0.01, 0.9]),
       cuts=st.lists(st.integers(0, 25_000), max_size=8), spill=st.booleans())
def test_streamed_cut_equals_the_finalizer_for_any_bytes_and_chunking(
    data: bytes, threshold: int | None, ceiling: int | None, strategy: str, ratio: float,
    cuts: list[int], spill: bool,
) -> None:
    config = config_for(threshold, ceiling, strategy, ratio, spill)
    outcome = stream_through(Policy(config, sink=MemoryStore(), notices=False), data, cuts)
    assert_same(outcome, data, Policy(config, sink=MemoryStore(), notices=False))


def test_invalid_bytes_that_grow_past_the_limit_are_cut_though_short_enough() -> None:
    # Text with one invalid byte in four (still text) grows by half once decoded:
    # 1600 bytes become 2400, over a 2 KB limit.
    data = b"abc\x80" * 400
    config = config_for(2048, None, "head_tail", 0.2)
    outcome = stream_through(Policy(config, sink=MemoryStore(), notices=False), data, [7, 900])
    assert outcome.truncated
    assert_same(outcome, data, Policy(config, sink=MemoryStore(), notices=False))


def test_ceiling_below_threshold_counts_decoded_bytes_of_a_short_stream() -> None:
    # 3000 raw bytes under a 4 KB threshold decode to over 4 KB: the threshold cuts first.
    data = b"xyz\xff" * 750
    config = config_for(4096, 2048, "head", 0.2)
    outcome = stream_through(Policy(config, sink=MemoryStore(), notices=False), data, [1, 2999])
    assert_same(outcome, data, Policy(config, sink=MemoryStore(), notices=False))


@pytest.mark.parametrize("size", [100, 5000, 9000, 300_000])
def test_a_binary_stream_is_kept_whole_and_named_in_one_line(size: int) -> None:
    store = MemoryStore()
    data = (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * (size // 256 + 1))[:size]
    outcome = stream_through(Policy(Config(), sink=store, notices=False), data,
                             list(range(0, size, 4093)))
    assert outcome.capped_by == "binary" and outcome.reference == reference_of(data)
    assert outcome.output.decode() == (
        f"[toolcap: binary output not shown: ELF executable, {human_size(size)};"
        f" full output: {reference_of(data)}]")
    assert store.read_bytes(outcome.reference) == data
    assert outcome.notice("t") == f"t: sent 0 B of {human_size(size)} to the assistant (binary)"


@PROPERTY
@given(data=streams(), threshold=limits, ceiling=limits,
       cuts=st.lists(st.integers(0, 25_000), max_size=8))
def test_no_stream_notice_says_more_was_sent_than_received(
    data: bytes, threshold: int | None, ceiling: int | None, cuts: list[int]
) -> None:
    config = config_for(threshold, ceiling, "head_tail", 0.2)
    outcome = stream_through(Policy(config, sink=MemoryStore(), notices=False), data, cuts)
    if outcome.result is None:
        assert outcome.notice("t") is None
        return
    sent = 0 if outcome.capped_by == "binary" else outcome.result.kept_bytes
    assert sent <= outcome.original_bytes
    assert outcome.notice("t") == (
        f"t: sent {human_size(sent)} of {human_size(len(data))} to the assistant"
        f" ({outcome.capped_by})")


def test_stream_reference_equals_one_shot_put_and_artifact_is_byte_identical() -> None:
    store = MemoryStore()
    data = bytes(range(256)) * 4000 + "fin ✓\n".encode()
    stream = open_stream(Policy(Config(), sink=store, notices=False), "t")
    for start in range(0, len(data), 4093):
        stream.write(data[start : start + 4093])
    outcome = stream.close()
    assert outcome.reference == reference_of(data)
    assert outcome.reference == MemoryStore().put(data)
    assert store.read_bytes(outcome.reference) == data
    assert outcome.reference in outcome.output.decode()


@PROPERTY
@given(lines=st.lists(st.sampled_from([b"", b"ok", b"x" * 300, "é漢".encode(), b"\xff"]),
                      min_size=1, max_size=400),
       final=st.booleans(), cuts=st.lists(st.integers(0, 130_000), max_size=8))
def test_a_spilled_stream_records_the_lines_and_marks_a_one_shot_put_records(
    lines: list[bytes], final: bool, cuts: list[int]
) -> None:
    # The stream counts each chunk's line breaks once and hands the count to the
    # spill's line index: the record must be the one a put of the whole would make.
    data = b"y\n" * 600 + b"\n".join(lines) * 40 + (b"\n" if final else b"")
    store = MemoryStore()
    policy = Policy(Config(tools={"t": {"size_threshold": 1024}}), sink=store, notices=False)
    with mock.patch.object(_lineindex, "STEP", 256):  # marks in a small stream too
        outcome = stream_through(policy, data, cuts)
    assert outcome.reference is not None
    one_shot = MemoryStore()
    streamed, whole = store.stat(outcome.reference), one_shot.stat(one_shot.put(data))
    assert (streamed.lines, streamed.bytes) == (whole.lines, whole.bytes)
    assert streamed.line_marks
    for offset, newlines in streamed.line_marks:
        assert data[:offset].count(b"\n") == newlines
    assert store.read_bytes(outcome.reference) == data


class _Recording(MemoryStore):
    """A store of one's own whose writer records how it was called."""

    def __init__(self, counting: bool) -> None:
        super().__init__()
        self.calls: list[tuple[bytes, int | None] | bytes] = []
        self.counting = counting

    def open_writer(self, *, tool: str | None = None):  # type: ignore[no-untyped-def]
        store, chunks = self, []

        class Plain:
            def write(self, chunk: bytes) -> None:
                store.calls.append(chunk)
                chunks.append(chunk)

            def commit(self) -> str:
                return store.put(b"".join(chunks))

            def abort(self) -> None:
                pass

        class Counting(Plain):
            wants_newlines = True

            def write(self, chunk: bytes, newlines: int | None = None) -> None:  # type: ignore[override]
                store.calls.append((chunk, newlines))
                chunks.append(chunk)

        return Counting() if self.counting else Plain()


@pytest.mark.parametrize("counting", [False, True])
def test_a_writer_gets_the_count_of_line_breaks_only_if_it_wants_it(counting: bool) -> None:
    # The public protocol: a writer without `wants_newlines` is called as write(chunk),
    # one with it as write(chunk, newlines), the count right or None (not counted).
    data = b"line\n" * 3000 + b"end"
    store = _Recording(counting)
    outcome = stream_through(Policy(Config(tools={"t": {"size_threshold": 1024}}), sink=store,
                                    notices=False), data, list(range(0, len(data), 1000)))
    assert outcome.reference == reference_of(data)
    if not counting:
        assert all(isinstance(call, bytes) for call in store.calls)
        return
    calls = [call for call in store.calls if isinstance(call, tuple)]
    assert len(calls) == len(store.calls)
    assert b"".join(chunk for chunk, _ in calls) == data
    assert all(count is None or count == chunk.count(b"\n") for chunk, count in calls)
    assert any(count is not None for _, count in calls)


def test_stream_that_fits_opens_no_artifact_and_passes_bytes_through() -> None:
    store = MemoryStore()
    data = b"\xffnot utf-8 but short\n"
    outcome = stream_through(Policy(Config(), sink=store, notices=False), data, [3])
    assert outcome.output == data and not outcome.truncated
    assert store.writes == 0


class _Failing(MemoryStore):
    """A store that is full: every write fails with the same reason."""

    def put(self, data: object, *, tool: str | None = None) -> str:
        raise StoreError("artifact store memory: No space left on device")

    def open_writer(self, *, tool: str | None = None):  # type: ignore[no-untyped-def]
        store = self

        class Writer:
            def write(self, chunk: bytes) -> None:
                store.put(chunk)

            def commit(self) -> str:
                raise AssertionError("never reached")

            def abort(self) -> None:
                pass

        return Writer()


def test_store_failure_still_cuts_and_says_why_like_the_finalizer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = b"line\n" * 20_000
    config = config_for(4096, None, "head_tail", 0.2)
    with caplog.at_level(logging.WARNING, logger="toolcap"):
        outcome = stream_through(Policy(config, sink=_Failing(), notices=False), data, [100])
    assert outcome.reference is None and outcome.not_kept
    assert "No space left" in (outcome.notice("t") or "")
    assert "could not keep the full output of t" in caplog.text
    assert_same(outcome, data, Policy(config, sink=_Failing(), notices=False))


def test_unlimited_stream_holds_nothing() -> None:
    cutter = StreamCutter(None)
    stream = CapStream(cutter)
    assert stream.passthrough
    stream.write(b"x" * 100_000)
    assert cutter.held == b"" and stream.close().output == b""


def test_memory_held_is_bounded_by_the_limits_not_the_stream() -> None:
    cutter = StreamCutter(4096, ceiling=8192)
    chunk = bytes(range(256)) * 256
    for _ in range(200):
        cutter.feed(chunk)
    held = len(cutter._head) + len(cutter._tail) + len(cutter.held)
    assert held <= 3 * 8192
    assert cutter.total == 200 * len(chunk)


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document=json_documents, indent=st.sampled_from([None, "  "]),
       threshold=limits, ceiling=limits, strategy=st.sampled_from(["head", "tail", "head_tail"]),
       cuts=st.lists(st.integers(0, 25_000), max_size=8), spill=st.booleans(),
       padding=st.sampled_from(["", "\n", " \r\n\t"]))
def test_a_streamed_json_document_is_cut_by_structure_exactly_as_the_finalizer_cuts_it(
    document: object, indent: str | None, threshold: int | None, ceiling: int | None,
    strategy: str, cuts: list[int], spill: bool, padding: str,
) -> None:
    data = (padding + write_json(document, indent) + padding).encode("utf-8")
    config = config_for(threshold, ceiling, strategy, 0.2, spill)
    outcome = stream_through(Policy(config, sink=MemoryStore(), notices=False), data, cuts)
    assert_same(outcome, data, Policy(config, sink=MemoryStore(), notices=False))
    if outcome.result is not None:
        json.loads(outcome.result.text)  # still a document


def test_a_stream_that_does_not_start_like_json_holds_no_copy_of_itself() -> None:
    cutter = StreamCutter(2048)
    cutter.feed(b"  log line {\n" + b"x" * 100_000)
    assert cutter._document is None


def test_format_text_cuts_a_json_stream_as_text() -> None:
    data = json.dumps([{"n": i} for i in range(3000)]).encode()
    config = Config(tools={"t": {"size_threshold": 2048, "format": "text"}})
    outcome = stream_through(Policy(config, sink=None, notices=False), data, [])
    assert outcome.result is not None
    with pytest.raises(ValueError):
        json.loads(outcome.result.text)
    assert_same(outcome, data, Policy(config, sink=None, notices=False))


@PROPERTY
@given(data=streams(), cuts=st.lists(st.integers(0, 25_000), max_size=8))
def test_an_unlimited_stream_that_names_binary_passes_text_whole_and_names_binary(
    data: bytes, cuts: list[int]
) -> None:
    store = MemoryStore()
    policy = Policy(config_for(None, None, "head_tail", 0.2), sink=store, notices=False)
    stream = open_stream(policy, "t", name_binary=True)
    written = write_through(stream, data, cuts)
    outcome = stream.close()
    (final,) = Policy(Config(), sink=MemoryStore(), notices=False).finalize(
        [ToolResponse("t", data)])
    if final.capped_by == "binary":  # the seam's own decision, from the same bytes
        assert written == b"" and outcome.capped_by == "binary"
        assert outcome.output.decode() == final.text
        assert store.read_bytes(reference_of(data)) == data
    else:
        assert written + outcome.output == data and outcome.result is None


def test_an_unlimited_stream_holds_only_its_first_bytes_while_they_decide() -> None:
    stream = open_stream(Policy(config_for(None, None, "head_tail", 0.2), sink=None), "t",
                         name_binary=True)
    stream.write(b"x" * 5000)
    assert not stream.passthrough and stream.release() == b""
    stream.write(b"y" * 100_000)  # past the sniff: text, written through from now on
    assert stream.passthrough and stream.release() == b"x" * 5000 + b"y" * 100_000
    assert stream.release() == b"" and stream.cutter.held == b""
    assert stream.close().output == b""


@pytest.mark.parametrize("limit", [None, 2048, 64 * 1024])
def test_a_binary_stream_that_starts_like_json_is_named_not_cut_as_json(
    limit: int | None,
) -> None:
    data = b'["' + b"\xff\xfe\xfd" * 3000 + b'"]'  # decodes to a valid JSON document
    policy = Policy(config_for(limit, None, "head_tail", 0.2), sink=MemoryStore(),
                    notices=False)
    stream = open_stream(policy, "t", name_binary=True)
    write_through(stream, data, [1, 5000])
    outcome = stream.close()
    assert outcome.capped_by == "binary" and outcome.result is not None
    assert outcome.result.text.startswith("[toolcap: binary output not shown: binary data, 8.7 KB")
    assert stream.cutter._document is None  # none of it held as a document
    (final,) = policy.finalize([ToolResponse("t", data)])
    assert final.capped_by == "binary" and final.text == outcome.result.text
