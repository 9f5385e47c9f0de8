"""The local store's total size, kept in a journal shared by concurrent processes."""

from __future__ import annotations

from pathlib import Path

from helpers import run_writers_together
from toolcap.store import LocalStore, StoreLimits

# Each writer waits for a line on stdin (all start together), then puts its own
# artifacts, races the others on shared ones (one link wins), deletes some of
# both (one unlink wins) and reads the total. A tiny compaction threshold makes
# the journal fold into snapshots again and again while the others append.
WRITER = """
import sys
from toolcap.store import LocalStore, StoreLimits, _usage
_usage.COMPACT_AT = 300
root, who = sys.argv[1], int(sys.argv[2])
store = LocalStore(root, fsync=False, limits=StoreLimits(max_total_size=None))
sys.stdin.readline()
refs = []
for n in range(120):
    refs.append(store.put(b"writer %d artifact %d " % (who, n) + b"x" * (n * 37 % 900)))
    shared = store.put(b"shared %d " % (n % 40) + b"y" * n)
    store.stored_total()
    if n % 3 == 0:
        store.delete(refs[n // 2])
    if n % 7 == who:
        try:
            store.delete(shared)
        except Exception:
            pass  # another writer removed it first
print("done", flush=True)
"""


def scanned_total(store: LocalStore) -> int:
    return sum(size for _, size, _ in store.scan())


def test_concurrent_writers_in_several_processes_keep_the_total_exact(tmp_path: Path) -> None:
    root = tmp_path / "store"
    LocalStore(root, fsync=False).put(b"present before the writers start")
    run_writers_together(WRITER, root, 4)
    store = LocalStore(root, fsync=False)
    assert len(store.scan()) > 100
    assert store.stored_total() == scanned_total(store)


def test_a_store_without_a_journal_or_with_a_damaged_one_is_recounted_once(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    store = LocalStore(root, fsync=False)
    for n in range(30):
        store.put(b"artifact %d" % n * (n + 1))
    journal = root / ".usage" / "journal"
    expected = scanned_total(store)
    assert store.stored_total() == expected

    journal.unlink()  # as a store written by a version without the journal
    assert LocalStore(root, fsync=False).stored_total() == expected
    assert journal.read_bytes() == b"=%d\n" % expected  # rebuilt as a snapshot

    with journal.open("ab") as handle:
        handle.write(b"+12\nnot a number\n")
    assert LocalStore(root, fsync=False).stored_total() == expected


def test_gc_recounts_a_total_that_drifted(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = LocalStore(root, fsync=False)
    for n in range(10):
        store.put(b"artifact %d" % n * 100)
    with (root / ".usage" / "journal").open("ab") as handle:
        handle.write(b"+5000\n")  # a change counted that never happened
    expected = scanned_total(store)
    assert store.stored_total() == expected + 5000
    store.gc()
    assert store.stored_total() == expected


def test_a_put_that_takes_the_kept_total_over_the_limit_evicts(tmp_path: Path) -> None:
    clock = [1_800_000_000.0]
    limits = StoreLimits(max_total_size=4000, minimum=1)
    store = LocalStore(tmp_path / "store", fsync=False, limits=limits, clock=lambda: clock[0])
    first = store.put(b"a" * 1500)
    clock[0] += 7200  # out of the eviction grace
    store.put(b"b" * 1500)
    clock[0] += 7200
    store.put(b"c" * 1500)  # 4500 > 4000: the least recently used goes
    assert [ident for ident, _, _ in store.scan()].count(first[8:]) == 0
    assert store.stored_total() == 3000 == scanned_total(store)
