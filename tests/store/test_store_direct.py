"""A big artifact written past the page cache: the same bytes, whatever the file system does."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcap.store import LocalStore, _direct
from toolcap.store._direct import _ALIGN, _CHUNK, DIRECT_MIN, write_whole

_real_pwrite = os.pwrite


def _data(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _spooled(tmp_path: Path, data: bytes) -> bytes:
    """``data`` written by write_whole into a new file, read back."""
    path = tmp_path / f"spool-{len(data)}"
    with open(path, "w+b") as spool:
        write_whole(spool, data)
        assert spool.tell() == len(data)
    try:
        return path.read_bytes()
    finally:
        path.unlink()


# Around every edge: the threshold, the alignment, the chunk.
_sizes = st.one_of(
    st.integers(0, 3 * _CHUNK + 2 * _ALIGN),
    st.sampled_from([DIRECT_MIN - 1, DIRECT_MIN, DIRECT_MIN + 1, _CHUNK + _ALIGN - 1,
                     2 * _CHUNK, 2 * _CHUNK + 1, 3 * _CHUNK - 1]),
)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=_sizes, seed=st.integers(0, 2**32))
def test_a_put_of_any_size_stores_exactly_its_bytes_under_their_hash(
    tmp_path: Path, size: int, seed: int
) -> None:
    store = LocalStore(tmp_path / "store")
    data = _data(size, seed)
    ref = store.put(data)
    assert ref == "toolcap:" + hashlib.sha256(data).hexdigest()[:32]
    assert store.path_of(ref).read_bytes() == data
    assert store.stat(ref).bytes == size


@pytest.fixture(autouse=True)
def fast_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The device counts as fast, whatever the machine's disk does during the tests."""
    monkeypatch.setattr(_direct, "_on", True)
    monkeypatch.setattr(_direct, "SLOW_BELOW", 0)


@pytest.fixture
def pwrites(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, bool]]:
    """Every pwrite: (offset, bytes, whether the descriptor had O_DIRECT set)."""
    calls: list[tuple[int, int, bool]] = []

    def record(fd: int, data: memoryview, offset: int) -> int:
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT)
        calls.append((offset, len(data), direct))
        return _real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", record)
    return calls


def test_a_big_artifacts_aligned_bulk_goes_to_the_disk_directly_the_rest_through_the_cache(
    tmp_path: Path, pwrites: list[tuple[int, int, bool]]
) -> None:
    data = _data(2 * _CHUNK + 3 * _ALIGN + 100, 1)
    assert _spooled(tmp_path, data) == data
    assert all(direct for _, _, direct in pwrites)
    assert [offset for offset, _, _ in pwrites] == [0, _CHUNK, 2 * _CHUNK]
    assert sum(size for _, size, _ in pwrites) == len(data) - 100  # the partial block is not


def test_data_under_the_threshold_is_written_through_the_cache(
    tmp_path: Path, pwrites: list[tuple[int, int, bool]]
) -> None:
    data = _data(DIRECT_MIN - 1, 2)
    assert _spooled(tmp_path, data) == data
    assert pwrites == []


def _refusing(after: int, how: Callable[[int, memoryview, int], int]) -> Callable[..., int]:
    """A pwrite that writes ``after`` times, then does ``how``."""
    count = [0]

    def pwrite(fd: int, data: memoryview, offset: int) -> int:
        count[0] += 1
        if count[0] > after:
            return how(fd, data, offset)
        return _real_pwrite(fd, data, offset)

    return pwrite


def _einval(fd: int, data: memoryview, offset: int) -> int:
    raise OSError(errno.EINVAL, "Invalid argument")


def _short(fd: int, data: memoryview, offset: int) -> int:
    return _real_pwrite(fd, data[:1000], offset)  # fewer bytes, and not aligned


@pytest.mark.parametrize("after", [0, 1, 2])
@pytest.mark.parametrize("how", [_einval, _short], ids=["refused", "short"])
def test_a_direct_write_refused_or_cut_short_has_the_rest_written_the_usual_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int,
    how: Callable[[int, memoryview, int], int]
) -> None:
    monkeypatch.setattr(os, "pwrite", _refusing(after, how))
    data = _data(3 * _CHUNK + 5, after)
    assert _spooled(tmp_path, data) == data


def test_a_descriptor_that_refuses_o_direct_gets_the_whole_write_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pwrites: list[tuple[int, int, bool]]
) -> None:
    real_fcntl = fcntl.fcntl

    def refuse_direct(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == fcntl.F_SETFL and arg & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_fcntl(fd, cmd, arg)

    monkeypatch.setattr(fcntl, "fcntl", refuse_direct)
    data = _data(DIRECT_MIN + _ALIGN, 3)
    assert _spooled(tmp_path, data) == data
    assert pwrites == []


def test_after_a_slow_direct_write_the_process_writes_through_the_cache(
    tmp_path: Path, pwrites: list[tuple[int, int, bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_direct, "SLOW_BELOW", 1 << 62)  # any device is slow
    data = _data(2 * _CHUNK, 3)
    assert _spooled(tmp_path, data) == data
    assert pwrites and all(direct for _, _, direct in pwrites)  # this one went directly
    pwrites.clear()
    assert _spooled(tmp_path, data) == data
    assert pwrites == []  # the next, through the cache
