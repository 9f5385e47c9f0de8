"""The literal scan: where the first of many literals occurs, in one pass."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap._literals import have_hyperscan, literal_scan

pytestmark = pytest.mark.skipif(not have_hyperscan(), reason="the hyperscan extra is not installed")

LITERALS = [b"error:", b"Error", b"ERR!", b"rror", b"FAIL\t", b"exit code", b"\xc3\xa9t\xc3\xa9"]
PIECES = st.sampled_from([b"error:", b"Error", b"ERR", b"!", b"rr", b"or", b"FAIL", b"\t", b"\n",
                          b"exit", b" code", b"x", b" ", "été".encode(), b"\xff"])


def _first_start(data: bytes, pos: int, endpos: int) -> int | None:
    found = [at for literal in LITERALS if (at := data.find(literal, pos, endpos)) >= 0]
    return min(found, default=None)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(PIECES, max_size=60).map(b"".join), st.data())
def test_the_scan_points_into_the_first_line_any_literal_occurs_in(data: bytes,
                                                                   draw: st.DataObject) -> None:
    scan = literal_scan(LITERALS)
    assert scan is not None
    pos = draw.draw(st.integers(0, len(data)))
    endpos = draw.draw(st.integers(pos, len(data)))
    first = _first_start(data, pos, endpos)
    found = scan.first(data, pos, endpos)
    if first is None:
        assert found is None
        return
    assert found is not None
    # A literal starts where it points, inside the range, in the first literal's line.
    assert any(data.startswith(literal, found) and found + len(literal) <= endpos
               for literal in LITERALS)
    assert first <= found and b"\n" not in data[first:found]


def test_a_literal_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        literal_scan([b"ok", b"two\nlines"])


def test_threads_scan_the_same_literals_at_once_each_with_its_own_scratch() -> None:
    scan = literal_scan(LITERALS)
    assert scan is not None
    data = b"ok\n" * 200_000 + b"exit code 3\n"
    expected = len(data) - len(b"exit code 3\n")
    results: list[int | None] = []
    start = threading.Barrier(4)

    def work() -> None:
        start.wait()
        results.extend(scan.first(data, 0, len(data)) for _ in range(20))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 80
