"""The local store's eviction order, kept incrementally: the same order as sorting a scan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import run_writers_together
from toolcap.store import LocalStore, MemoryStore, StoreLimits

HOUR = 3600.0
KB = 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def slow_order(store: LocalStore) -> list[tuple[float, str, int]]:
    """What eviction sorted before the index: every scanned artifact by (last use, id)."""
    return sorted((mtime, ident, size) for ident, size, mtime in store.scan())


def kept_order(store: LocalStore) -> list[tuple[float, str, int]]:
    order = store.eviction_order()
    assert order is not None
    return list(order)


# Operations: put content n, read artifact n (if present), delete it, let time pass.
operation = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 30), st.integers(1, 3 * KB)),
    st.tuples(st.just("read"), st.integers(0, 30), st.just(0)),
    st.tuples(st.just("delete"), st.integers(0, 30), st.just(0)),
    st.tuples(st.just("wait"), st.sampled_from([0.25, 1, 59, 600, 2 * HOUR]), st.just(0)),
)


def apply(store: Any, refs: dict[int, str], clock: Clock, op: tuple[str, float, int]) -> None:
    kind, n, size = op
    if kind == "put":
        refs[int(n)] = store.put((b"%03d " % n) * (size // 4 + 1))
    elif kind == "wait":
        clock.now += n
    elif int(n) in refs:
        ref = refs[int(n)]
        present = any(info.ref == ref for info in store.list_artifacts())
        if present and kind == "read":
            store.read_bytes(ref, 0, 10)
        elif present:
            store.delete(ref)


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(operation, max_size=40))
def test_the_kept_order_is_the_order_of_a_sorted_scan(tmp_path_factory: Any, ops: list[Any]
                                                      ) -> None:
    clock = Clock()
    store = LocalStore(tmp_path_factory.mktemp("lru"), fsync=False, clock=clock,
                       limits=StoreLimits(max_total_size=None))
    refs: dict[int, str] = {}
    for op in ops:
        apply(store, refs, clock, op)
    assert kept_order(store) == slow_order(store)


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(operation, max_size=40), cap=st.integers(2 * KB, 12 * KB))
def test_eviction_through_the_kept_order_removes_what_sorting_a_scan_removes(
    tmp_path_factory: Any, ops: list[Any], cap: int
) -> None:
    # The memory store still sorts a scan on every eviction: the reference.
    limits = StoreLimits(max_total_size=cap, max_age_days=None, minimum=1)
    clocks = Clock(), Clock()
    local = LocalStore(tmp_path_factory.mktemp("lru"), fsync=False, clock=clocks[0],
                       limits=limits)
    memory = MemoryStore(clock=clocks[1], limits=limits)
    refs: tuple[dict[int, str], dict[int, str]] = ({}, {})
    for op in ops:
        apply(local, refs[0], clocks[0], op)
        apply(memory, refs[1], clocks[1], op)
        assert {i.ref for i in local.list_artifacts()} == {i.ref for i in memory.list_artifacts()}
    assert kept_order(local) == slow_order(local)


def test_a_store_without_an_index_gets_one_from_a_scan_when_it_first_evicts(
    tmp_path: Path,
) -> None:
    clock = Clock()
    root = tmp_path / "store"
    old = LocalStore(root, fsync=False, clock=clock, limits=StoreLimits(max_total_size=None))
    refs = [old.put(b"%d " % n * 500) for n in range(6) if not setattr(clock, "now", clock.now + 1)]
    for path in sorted((root / ".lru").rglob("*"), reverse=True):  # as an older version left it
        path.rmdir() if path.is_dir() else path.unlink()
    clock.now += 2 * HOUR
    capped = LocalStore(root, fsync=False, clock=clock,
                        limits=StoreLimits(max_total_size=4 * KB, minimum=1))
    capped.put(b"new " * 300)
    left = {info.ref for info in capped.list_artifacts()}
    assert refs[0] not in left and refs[-1] in left  # the oldest went first
    assert kept_order(capped) == slow_order(capped)


def test_gc_notes_an_artifact_a_killed_writer_left_unnoted(tmp_path: Path) -> None:
    clock = Clock()
    store = LocalStore(tmp_path / "s", fsync=False, clock=clock,
                       limits=StoreLimits(max_total_size=None))
    ref = store.put(b"noted " * 100)
    ident = ref.removeprefix("toolcap:")
    assert [ident for _, ident, _ in kept_order(store)] == [ident]  # the index is built
    for note in (tmp_path / "s" / ".lru").rglob(ident):
        note.unlink()
    assert kept_order(store) == []
    store.gc()
    assert [ident for _, ident, _ in kept_order(store)] == [ident]


# Each writer puts into one capped store with its own clock, two hours on per
# put, so every put past the cap evicts; all start together on a line of stdin.
WRITER = """
import sys
from toolcap.store import LocalStore, StoreLimits
root, who = sys.argv[1], int(sys.argv[2])
class Clock:
    now = 1_800_000_000.0 + who
    def __call__(self):
        Clock.now += 7200
        return Clock.now
store = LocalStore(root, fsync=False, clock=Clock(),
                   limits=StoreLimits(max_total_size=40_000, max_age_days=None, minimum=1))
sys.stdin.readline()
refs = []
for n in range(80):
    refs.append(store.put(b"writer %d put %d " % (who, n) + b"z" * (n * 53 % 1500)))
    store.put(b"shared %d " % (n % 10) + b"s" * 700)
    if n % 5 == who:
        try:
            store.read_bytes(refs[n // 2], 0, 5)
        except Exception:
            pass  # evicted by another writer
print("done", flush=True)
"""


def test_writers_in_several_processes_keep_the_order_and_evict_down_to_the_cap(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    run_writers_together(WRITER, root, 4)
    store = LocalStore(root, fsync=False, limits=StoreLimits(max_total_size=None))
    scanned = slow_order(store)
    assert 0 < len(scanned) < 4 * 90  # evictions happened
    assert kept_order(store) == scanned  # every artifact noted once, in the scan's order
    assert store.stored_total() == sum(size for _, _, size in scanned)
    # No note left behind for an artifact that is gone, once the order was walked.
    notes = [p.name for p in (root / ".lru").rglob("*") if p.is_file() and p.name != "complete"]
    assert sorted(notes) == sorted(ident for _, ident, _ in scanned)
