"""Artifact store benchmark: costs as ratios against baselines measured in the same run.

    python benchmarks/bench_store.py [--dir DIR] [--quick]

1. put of 1 MB and 100 MB into a LocalStore vs writing the same bytes to a plain
   file (goal: within 1.5x), and vs hashing them then writing them (the floor of
   any content-addressed store). Both with and without a flush to disk
   (fdatasync), so like is compared with like: the store flushes by default.
2. a repeated put of content already stored vs hashing it (goal: no write, so
   about the cost of SHA-256).
3. a 4 KB range read from a 100 MB artifact vs reading the whole file (goal: at
   least 100x cheaper).

Each figure is the best of several runs (the least disturbed by other load).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolcap.store import LocalStore, StoreLimits

#: No size limit: the benchmarks measure writes and reads, never cuts or eviction.
UNLIMITED = StoreLimits(max_artifact_size=None, max_total_size=None)

MB = 1024 * 1024


def compare(
    runs: int,
    measured: Callable[[int], object],
    baseline: Callable[[int], object],
    cleanup: Callable[[], object] = lambda: None,
) -> tuple[float, float]:
    """Best-of-``runs`` seconds of ``measured(i)`` and ``baseline(i)``, interleaved so
    that both meet the same conditions; ``cleanup`` runs untimed after each."""
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(runs):
        for action, out in ((measured, times[0]), (baseline, times[1])):
            start = time.perf_counter()
            action(i)
            out.append(time.perf_counter() - start)
            cleanup()
    return min(times[0]), min(times[1])


def variant(data: bytes, i: int) -> bytes:
    # A distinct content per run (else the store would rightly write nothing).
    return b"%016d" % i + data[16:]


_datasync = getattr(os, "fdatasync", os.fsync)  # what the store itself uses


def plain_write(folder: Path, data: bytes, i: int, fsync: bool, *, hashed: bool = False) -> None:
    if hashed:
        hashlib.sha256(data).digest()
    path = folder / f"plain-{i}"
    with open(path, "wb") as handle:
        handle.write(data)
        if fsync:
            handle.flush()
            _datasync(handle.fileno())


def bench_put(work: Path, size: int, runs: int) -> list[tuple[str, float, float]]:
    base = os.urandom(size)
    inputs = [variant(base, i) for i in range(runs)]
    rows = []
    for fsync in (True, False):
        label = "fsync" if fsync else "no fsync"
        folder = work / f"put-{size}-{label}"
        store = LocalStore(folder / "store", fsync=fsync, limits=UNLIMITED)
        (folder / "plain").mkdir(parents=True)

        def cleanup(folder: Path = folder) -> None:
            # Keep neither disk nor dirty pages piling up from run to run.
            shutil.rmtree(folder / "store", ignore_errors=True)
            shutil.rmtree(folder / "plain", ignore_errors=True)
            (folder / "plain").mkdir()
            os.sync()

        for hashed in (False, True):
            measured, baseline = compare(
                runs,
                lambda i, s=store: s.put(inputs[i]),
                lambda i, d=folder, f=fsync, h=hashed: plain_write(
                    d / "plain", inputs[i], i, f, hashed=h),
                cleanup,
            )
            against = "sha256 + plain write" if hashed else "plain file write"
            rows.append((f"put {size // MB} MB ({label}) vs {against}", measured, baseline))
    return rows


def bench_repeat(work: Path, size: int, runs: int) -> tuple[str, float, float]:
    data = os.urandom(size)
    store = LocalStore(work / "repeat", limits=UNLIMITED)
    store.put(data)
    os.sync()
    measured, baseline = compare(runs, lambda _: store.put(data),
                                 lambda _: hashlib.sha256(data).digest())
    return (f"repeated put {size // MB} MB vs sha256 alone", measured, baseline)


def bench_range(work: Path, size: int, runs: int) -> tuple[str, float, float]:
    store = LocalStore(work / "range", limits=UNLIMITED,
                       fsync=False)
    ref = store.put(os.urandom(size))
    path = store.path_of(ref)
    offsets = [(i * 7919 * 4096) % (size - 4096) for i in range(runs)]
    measured, baseline = compare(runs, lambda i: store.read_bytes(ref, offsets[i], 4096),
                                 lambda _: path.read_bytes())
    return (f"4 KB range read of a {size // MB} MB artifact vs whole-file read", measured,
            baseline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write (default: the system temp dir)")
    parser.add_argument("--quick", action="store_true", help="fewer runs, 20 MB not 100 MB")
    args = parser.parse_args()
    big = 20 * MB if args.quick else 100 * MB
    runs = 3 if args.quick else 5
    work = Path(tempfile.mkdtemp(prefix="toolcap-bench-", dir=args.dir))
    try:
        rows = [*bench_put(work, MB, runs * 4), *bench_put(work, big, runs)]
        rows.append(bench_repeat(work, big, runs))
        rows.append(bench_range(work, big, runs * 20))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(name) for name, _, _ in rows)
    print(f"{'case':<{width}}  {'toolcap':>10}  {'baseline':>10}  ratio")
    for name, measured, baseline in rows:
        ratio = measured / baseline
        shown = f"{ratio:.2f}x" if ratio >= 0.01 else f"1/{baseline / measured:,.0f}"
        print(f"{name:<{width}}  {measured * 1e3:>8.2f}ms  {baseline * 1e3:>8.2f}ms  {shown}")


if __name__ == "__main__":
    main()
