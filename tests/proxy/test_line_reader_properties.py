"""The proxy's line reader under a maximum line size: every line is returned whole or
handed over as a long line, in order, byte for byte; none returned is over the maximum."""

from __future__ import annotations

import os
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._io import LineReader, LongLine

COUNTS = {"cases": 0, "long": 0}


def read_all(data: bytes, chunk: int, max_line: int | None, take: int,
             buffers: bool = False, first: int | None = None) -> list[tuple[str, bytes]]:
    """What the reader gives for ``data``; a long-line handler that takes only ``take``
    chunks of each long line (the reader must skip the rest)."""
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as stream:
            stream.write(data)

    feeder = threading.Thread(target=feed)
    feeder.start()
    got: list[tuple[str, bytes]] = []

    def on_long(line: LongLine) -> None:
        pieces = []
        for number, piece in enumerate(line.chunks()):
            if number == take:
                break
            pieces.append(piece)
        got.append(("long", b"".join(pieces)))

    reader = LineReader(read_end, chunk, first_read=first or chunk, max_line=max_line,
                        on_long_line=on_long)
    read = reader.read_line if buffers else reader.readline
    while (line := read()) is not None:
        # A line longer than a read spans reads: read_line gives its buffer, uncopied.
        assert isinstance(line, bytearray if buffers and len(line) > max(chunk, first or 0) else (
            bytes, bytearray) if buffers else bytes)
        got.append(("line", bytes(line)))
    feeder.join()
    os.close(read_end)
    return got


lines = st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=12)


@settings(deadline=None, max_examples=300)
@given(lines=lines, trailing=st.booleans(), chunk=st.integers(1, 40),
       max_line=st.integers(1, 50))
def test_every_line_is_returned_whole_or_handed_over_whole_in_order(
    lines: list[bytes], trailing: bool, chunk: int, max_line: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    got = read_all(data, chunk, max_line, take=-1)
    expected = [line for line in lines]
    if lines and not trailing and lines[-1] == b"":
        expected = expected[:-1]  # a file ending in "\n" has no empty last line
    assert [line for _, line in got] == expected
    for kind, line in got:
        assert (kind == "long") == (len(line) > max_line)
    COUNTS["cases"] += 1
    COUNTS["long"] += sum(kind == "long" for kind, _ in got)


@settings(deadline=None, max_examples=200)
@given(lines=lines, chunk=st.integers(1, 40), max_line=st.integers(1, 50),
       take=st.integers(0, 3))
def test_what_a_handler_leaves_of_a_long_line_is_skipped_not_read_as_lines(
    lines: list[bytes], chunk: int, max_line: int, take: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    got = read_all(data, chunk, max_line, take=take)
    short = [line for line in lines if len(line) <= max_line]
    assert [line for kind, line in got if kind == "line"] == short
    assert sum(kind == "long" for kind, _ in got) == len(lines) - len(short)


@settings(deadline=None, max_examples=200)
@given(lines=lines, trailing=st.booleans(), chunk=st.integers(1, 40), first=st.integers(1, 40),
       max_line=st.none() | st.integers(1, 50))
def test_a_first_read_of_another_size_than_the_rest_changes_no_line(
    lines: list[bytes], trailing: bool, chunk: int, first: int, max_line: int | None
) -> None:
    # Between lines the reader asks for first_read bytes, within a line for chunk_size.
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    assert read_all(data, chunk, max_line, take=-1, first=first) == read_all(
        data, chunk, max_line, take=-1)
    assert read_all(data, chunk, max_line, take=-1, buffers=True, first=first) == read_all(
        data, chunk, max_line, take=-1)


@settings(deadline=None, max_examples=200)
@given(lines=lines, trailing=st.booleans(), chunk=st.integers(1, 40),
       max_line=st.none() | st.integers(1, 50))
def test_read_line_gives_what_readline_gives_without_copying_a_line_that_spans_reads(
    lines: list[bytes], trailing: bool, chunk: int, max_line: int | None
) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    assert read_all(data, chunk, max_line, take=-1, buffers=True) == read_all(
        data, chunk, max_line, take=-1)


def test_zz_print_counts() -> None:
    print(f"line reader: {COUNTS['cases']} cases, {COUNTS['long']} long lines handed over")
