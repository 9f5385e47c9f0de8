"""A local store that flushes on a thread: readable at once, on the disk soon after."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from toolcap.store import LocalStore, StoreLimits, _flush, _local


@pytest.fixture
def flushed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fdatasync, as (thread name, path of the file)."""
    calls: list[tuple[str, str]] = []

    def record(fd: int) -> None:
        calls.append((threading.current_thread().name, os.readlink(f"/proc/self/fd/{fd}")))

    monkeypatch.setattr(_local, "_datasync", record)
    monkeypatch.setattr(_flush, "_datasync", record)
    return calls


def test_an_artifact_is_readable_by_another_reader_as_soon_as_put_returns(
    tmp_path: Path, flushed: list[tuple[str, str]]
) -> None:
    store = LocalStore(tmp_path)
    store.flush_in_background()
    data = b"kept\n" * 10_000
    ref = store.put(data)
    assert LocalStore(tmp_path).read_bytes(ref) == data  # a reader that shares nothing
    assert store.wait_flushed(30)
    data_file = str(store.path_of(ref))
    assert {path for _, path in flushed} == {data_file, data_file + ".json"}
    assert all(thread == "toolcap-flush" for thread, _ in flushed)  # never the writer's


def test_a_streamed_artifact_is_flushed_on_the_thread_too(
    tmp_path: Path, flushed: list[tuple[str, str]]
) -> None:
    store = LocalStore(tmp_path)
    store.flush_in_background()
    writer = store.open_writer()
    for _ in range(4):
        writer.write(b"chunk " * 1000)
    ref = writer.commit()
    assert store.wait_flushed(30)
    assert str(store.path_of(ref)) in {path for _, path in flushed}
    assert all(thread == "toolcap-flush" for thread, _ in flushed)


def test_without_it_the_writer_flushes_before_the_link(
    tmp_path: Path, flushed: list[tuple[str, str]]
) -> None:
    store = LocalStore(tmp_path)
    store.put(b"x" * 100)
    assert flushed and all(thread == threading.current_thread().name for thread, _ in flushed)
    assert store.wait_flushed(0)


def test_an_artifact_removed_before_its_flush_is_skipped(tmp_path: Path) -> None:
    flush = _flush.BackgroundFlush(delay=0)
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    kept.write_bytes(b"a")
    flush.add(str(gone), str(kept))
    assert flush.wait(30)
    flush.add(str(kept))
    assert flush.wait(30)


def test_a_long_streams_head_is_flushed_while_the_rest_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed = threading.Event()
    sizes: list[int] = []

    def record(fd: int) -> None:
        sizes.append(os.fstat(fd).st_size)
        flushed.set()

    monkeypatch.setattr(_flush, "_datasync", record)
    store = LocalStore(tmp_path, limits=StoreLimits(max_artifact_size=64 * 1024, minimum=1))
    head, _ = store.limits.split()
    data = b"".join(b"line %06d of a long stream\n" % i for i in range(20_000))
    with store.open_writer() as writer:
        for start in range(0, len(data), 4096):
            writer.write(data[start : start + 4096])
        # The ring is in use: the head is final, and its flush has started meanwhile.
        assert flushed.wait(30)
    assert sizes == [head]
    assert writer.ref is not None and store.stat(writer.ref).partial
    stored = store.read_bytes(writer.ref)
    assert data.startswith(stored[: store.stat(writer.ref).head_bytes])


def test_a_big_artifact_leaves_the_page_cache_once_flushed_a_small_one_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not hasattr(os, "posix_fadvise"):
        pytest.skip("no posix_fadvise on this platform: nothing is dropped")
    order: list[tuple[str, str, int]] = []  # (what, file, advice)
    real_sync, real_advise = _flush._datasync, os.posix_fadvise

    def sync(fd: int) -> None:
        order.append(("sync", os.readlink(f"/proc/self/fd/{fd}"), 0))
        real_sync(fd)

    def advise(fd: int, offset: int, length: int, advice: int) -> None:
        order.append(("advise", os.readlink(f"/proc/self/fd/{fd}"), advice))
        real_advise(fd, offset, length, advice)

    monkeypatch.setattr(_flush, "_datasync", sync)
    monkeypatch.setattr(os, "posix_fadvise", advise)
    store = LocalStore(tmp_path)
    store.flush_in_background()
    big = b"".join(b"line %07d of a big result\n" % i for i in range(_flush.DROP_CACHED_MIN // 20))
    small = b"small\n" * 1000
    big_ref, small_ref = store.put(big), store.put(small)
    assert store.wait_flushed(30)
    big_file = str(store.path_of(big_ref))
    dropped = [(path, advice) for what, path, advice in order if what == "advise"]
    assert dropped == [(big_file, os.POSIX_FADV_DONTNEED)]  # not its record, not the small one
    assert order.index(("sync", big_file, 0)) < order.index(("advise", big_file,
                                                             os.POSIX_FADV_DONTNEED))
    # Read back from the disk, whole and by range, as before.
    reader = LocalStore(tmp_path)
    assert reader.read_bytes(big_ref) == big and reader.read_bytes(small_ref) == small
    assert reader.read_lines(big_ref, 5000, 5001) == [f"line {i:07d} of a big result"
                                                      for i in (4999, 5000)]
