"""A big put written while it is hashed: the same artifact as a put that hashes first."""

from __future__ import annotations

import errno
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcap.core._errors import StoreError
from toolcap.store import LocalStore, MemoryStore, StoreLimits
from toolcap.store._direct import DIRECT_MIN


def _text(size: int, seed: int) -> bytes:
    """Lines of random lengths (some long), so that the record's line marks matter."""
    rng = random.Random(seed)
    out = bytearray()
    while len(out) < size:
        out += rng.randbytes(rng.choice([10, 80, 5000])).replace(b"\n", b"x") + b"\n"
    return bytes(out[:size])


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(DIRECT_MIN - 2, DIRECT_MIN + 300_000), seed=st.integers(0, 2**32),
       capped=st.booleans())
def test_a_big_put_stores_the_bytes_and_record_a_put_that_hashes_first_stores(
    tmp_path: Path, size: int, seed: int, capped: bool
) -> None:
    limits = StoreLimits(max_artifact_size=DIRECT_MIN // 2) if capped else None
    local = LocalStore(tmp_path / f"s{seed}-{size}-{capped}", limits=limits)
    memory = MemoryStore(limits=limits)  # never writes early
    data = _text(size, seed)
    ref = local.put(data)
    assert ref == memory.put(data)
    ours, theirs = local.stat(ref), memory.stat(ref)
    for field in ("sha256", "bytes", "original_bytes", "lines", "partial", "head_bytes",
                  "stored_sha256", "line_marks"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert local.read_bytes(ref, 0, size) == memory.read_bytes(ref, 0, size)


def _spools(store: LocalStore) -> list[Path]:
    return [path for path in (store.root / ".tmp").iterdir() if path.suffix == ".tmp"]


def test_a_repeated_big_put_returns_the_reference_and_leaves_no_spool(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    data = _text(DIRECT_MIN + 10, 1)
    first = store.put(data)
    assert store.put(data) == first
    assert _spools(store) == []
    assert store.read_bytes(first, 0, len(data)) == data


def test_a_big_put_whose_write_fails_raises_and_names_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)

    def full(spool: object, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "write_spool", full)
    with pytest.raises(StoreError, match="No space left"):
        store.put(_text(DIRECT_MIN, 2))
    assert _spools(store) == []
    assert store.list_artifacts() == []


def test_a_big_put_that_cannot_start_its_write_thread_leaves_no_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    store = LocalStore(tmp_path)

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises((RuntimeError, StoreError)):
        store.put(_text(DIRECT_MIN, 3))
    monkeypatch.undo()
    assert _spools(store) == []
    assert store.list_artifacts() == []
