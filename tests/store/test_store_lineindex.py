"""The sparse line index: reads by line through it equal reads by scanning, and seek."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.store import LocalStore, MemoryStore, StoreLimits, _lineindex

PROPERTY = settings(deadline=None, derandomize=True, max_examples=200)


def scanned(data: bytes) -> list[str]:
    """Lines as a scan from the start numbers them: a final newline ends the last line."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line.decode("utf-8", "replace") for line in lines]


@st.composite
def files(draw: st.DrawFn) -> bytes:
    """Lines short, empty and long (several index steps), any bytes, final newline or not."""
    line = st.one_of(
        st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
        st.integers(0, 400).map(lambda n: b"x" * n),
        st.sampled_from([b"", "é€😀".encode(), b"\xff\xfe"]),
    )
    body = b"\n".join(draw(st.lists(line, max_size=80)))
    return body + draw(st.sampled_from([b"", b"\n", b"\n\n"]))


@pytest.fixture
def tiny_steps() -> Iterator[None]:
    """Marks every 64 bytes, at most 4 of them: small files exercise thinning and seeks."""
    with mock.patch.object(_lineindex, "STEP", 64), mock.patch.object(_lineindex, "MAX_MARKS", 4):
        yield


def chunked(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    pos = 0
    for size in sizes:
        yield data[pos : pos + size]
        pos += size
    yield data[pos:]


@PROPERTY
@given(data=files(), first=st.integers(1, 120), count=st.integers(1, 40),
       sizes=st.lists(st.integers(1, 150), max_size=10),
       written=st.sampled_from(["put", "streamed", "streamed with counts"]),
       cut=st.sampled_from([None, 1024, 1500]))
def test_a_line_read_through_the_index_equals_a_read_by_scanning(
    data: bytes, first: int, count: int, sizes: list[int], written: str, cut: int | None
) -> None:
    with mock.patch.object(_lineindex, "STEP", 64), mock.patch.object(_lineindex, "MAX_MARKS", 4):
        store = MemoryStore(limits=StoreLimits(max_artifact_size=cut, minimum=1))
        if written != "put":
            counted = written == "streamed with counts"
            with store.open_writer() as writer:
                for chunk in chunked(data, sizes):
                    # A stream that counted the line breaks hands the count over.
                    writer.write(chunk, chunk.count(b"\n") if counted else None)
            ref = writer.ref
            assert ref is not None
        else:
            ref = store.put(data)
    stored = store.read_bytes(ref)  # a cut artifact's lines are those of its stored bytes
    info = store.stat(ref)
    assert len(info.line_marks) <= 4
    for offset, newlines in info.line_marks:  # each mark tells the truth
        assert stored[:offset].count(b"\n") == newlines
    assert info.lines == len(scanned(data))
    if len(stored) > 64 * 2 and written != "streamed with counts":
        assert info.line_marks  # (with counts, marks fall only where a chunk starts)
    last = first + count - 1
    assert store.read_lines(ref, first, last) == scanned(stored)[first - 1 : last]
    assert store.read_lines(ref, first) == scanned(stored)[first - 1 :]


def test_marks_are_spaced_by_the_step_and_thinned_to_at_most_the_maximum(
    tiny_steps: None,
) -> None:
    marks = _lineindex.LineMarks()
    data = b"ab\n" * 400  # 1200 bytes: 18 marks at 64, thinned to 4
    for pos in range(0, len(data), 7):
        marks.feed(data[pos : pos + 7])
    assert marks.newlines == 400
    taken = marks.marks()
    assert 2 <= len(taken) <= 4
    assert all(data[:offset].count(b"\n") == lines for offset, lines in taken)
    gaps = {b[0] - a[0] for a, b in itertools.pairwise(taken)}
    assert min(gaps) >= 64


@PROPERTY
@given(data=files(), sizes=st.lists(st.integers(1, 500), max_size=10))
def test_the_count_and_every_mark_agree_with_counting_from_the_start_runs_without_breaks_too(
    data: bytes, sizes: list[int]
) -> None:
    with mock.patch.object(_lineindex, "STEP", 64), mock.patch.object(_lineindex, "MAX_MARKS", 4):
        marks = _lineindex.LineMarks()
        fed = sum(marks.feed(chunk) for chunk in chunked(data, sizes))
    assert fed == marks.newlines == data.count(b"\n")
    assert all(data[:offset].count(b"\n") == lines for offset, lines in marks.marks())


def test_an_artifact_recorded_without_marks_or_with_bad_ones_is_read_by_scanning(
    tmp_path: Path, tiny_steps: None
) -> None:
    data = b"".join(b"line %d\n" % n for n in range(200))
    store = LocalStore(tmp_path / "store", fsync=False)
    ref = store.put(data)
    record_path = store.path_of(ref).with_name(ref[8:] + ".json")
    record = json.loads(record_path.read_text())
    assert record["line_marks"]
    want = scanned(data)[150:160]
    for marks in (None, [[10, 99]], [[5, 0], [3, 0]], "x", [[10**12, 0]]):
        if marks is None:
            del record["line_marks"]  # as versions before the index wrote it
        else:
            record["line_marks"] = marks  # damaged: a wrong count, out of order, not a list
        record_path.write_text(json.dumps(record))
        fresh = LocalStore(tmp_path / "store", fsync=False)
        assert fresh.stat(ref).line_marks in ((), ((10, 99),))
        if marks == [[10, 99]]:
            continue  # well-formed but a lie about the count: the record is trusted
        assert fresh.read_lines(ref, 151, 160) == want


class CountingStore(MemoryStore):
    """Counts the stored bytes every read asks for."""

    read = 0

    def read_range(self, ident: str, start: int, end: int) -> bytes:
        block = super().read_range(ident, start, end)
        self.read += len(block)
        return block


def test_the_last_lines_of_a_big_artifact_are_read_without_reading_the_rest() -> None:
    store = CountingStore(limits=StoreLimits(max_artifact_size=None, max_total_size=None))
    data = b"".join(b"%09d some output of a tool\n" % n for n in range(1_000_000))  # 36 MB
    ref = store.put(data)
    store.read = 0
    total = store.stat(ref).lines
    assert store.read_lines(ref, total - 19, total) == scanned(data)[-20:]
    # At most the index step before the first line, then one read chunk past it.
    assert store.read <= 2 * _lineindex.STEP + 4096 < len(data) // 10

    pieces = [data[pos : pos + 65536] + b"x\n" for pos in range(0, len(data), 65536)]
    with store.open_writer() as writer:  # the same through a streaming write
        for piece in pieces:
            writer.write(piece)
    assert writer.ref is not None
    store.read = 0
    streamed = scanned(b"".join(pieces))
    assert store.read_lines(writer.ref, 500_000, 500_002) == streamed[499_999:500_002]
    assert store.read <= 2 * _lineindex.STEP + 4096
