"""``toolcap cap`` on a pipe: throughput against ``cat`` on the same pipe, and peak memory.

Run from the repository root::

    .venv/bin/python benchmarks/bench_cap_stream.py            # 1 GB, best of 3
    .venv/bin/python benchmarks/bench_cap_stream.py --size 256MB --repeat 1
    .venv/bin/python benchmarks/bench_cap_stream.py --keep-lines   # also without keep_lines

The same producer (1 MiB blocks of log lines, an error line every 512 KB, written as
fast as Python can) feeds ``cat > /dev/null`` (the baseline, measured in the same
run) and ``toolcap cap > /dev/null`` with spilling off and on. Every consumer reads
the same pipe, widened to what ``toolcap cap`` asks for on its own.

Spilling keeps the original in the artifact store, which flushes it to the disk
(``fdatasync``) before the reference is printed: with spilling on, a stream over a
few MB is bound by the disk, whose flush rate this run also measures (writing and
flushing 256 MB). So spilling is measured twice: into a store on the disk, and into
a store on tmpfs (``/dev/shm``), where the flush costs nothing and what is left is
toolcap's own work (read, hash, write, cut).

Goals: at least 0.8 of cat's throughput with spilling off and 0.5 with it on (the
tmpfs figure; the disk figure is bound by the flush). With ``--keep-lines`` the same
run again with ``keep_lines = []`` (the cut without kept lines): the built-in
``keep_lines`` set (the default) should cost at most 20% of that throughput. Beside each
time the processor seconds the consumer itself used, and the rates of the two passes
spilling makes over every byte (SHA-256, counting line breaks): the work that bounds
the spilled figures on two cores (see docs/performance.md). Peak
memory is the largest resident set of ``toolcap cap`` (via a small wrapper's
RUSAGE_CHILDREN) at 10 MB, 100 MB and the full size: it should be the same small
constant at every size.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolcap import human_size, parse_size
from toolcap.cli._cap import CHUNK

TOOLCAP = str(Path(sys.executable).with_name("toolcap"))
PRODUCER = """
import sys
block = b"".join(b"2026-11-29T12:00:00Z worker-%03d INFO request handled in 12 ms\\n" % (i % 1000)
                 for i in range(16384))
block = (block * 2)[: 1 << 19] + b"src/main.rs:4:5: error[E0308]: mismatched types\\n"
block = (block + block)[: 1 << 20]
size = int(sys.argv[1])
write = sys.stdout.buffer.write
while size > 0:
    write(block[: min(size, len(block))])
    size -= len(block)
"""
# Reports the peak RSS of the command it runs; it is itself small, so the figure is
# the command's own (a child's peak also counts the address space it was forked from).
PEAK = """
import os, resource, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
os.waitpid(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
"""


def pipe_through(command: list[str], size: int, env: dict[str, str]) -> tuple[float, float]:
    """Seconds for ``size`` bytes from the producer through ``command`` to /dev/null, and
    the processor seconds (user and system) ``command`` itself used.

    Every consumer gets the same pipe: what ``toolcap cap`` asks for on its own
    (:data:`CHUNK`), so that the pipe size, which decides how often producer and
    consumer take turns, is the same for ``cat``.
    """
    reader, writer = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(reader, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)
    start = time.perf_counter()
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, str(size)], stdout=writer)
    consumer = subprocess.Popen(command, stdin=reader, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
    os.close(reader)
    os.close(writer)
    _, status, usage = os.wait4(consumer.pid, 0)
    consumer.returncode = os.waitstatus_to_exitcode(status)
    producer.wait()
    elapsed = time.perf_counter() - start
    if consumer.returncode or producer.returncode:
        raise SystemExit(f"{command} failed ({consumer.returncode}, {producer.returncode})")
    return elapsed, usage.ru_utime + usage.ru_stime


def peak_rss(size: int, args: list[str], env: dict[str, str], work: Path) -> int:
    """Peak resident set of ``toolcap cap ARGS`` reading ``size`` bytes, in bytes."""
    report = work / "peak"
    pipe_through([sys.executable, "-S", "-c", PEAK, str(report), TOOLCAP, "cap", *args],
                 size, env)
    return int(report.read_text()) * 1024


def disk_flush_rate(work: Path) -> float:
    """Bytes per second of writing 256 MB into ``work`` and flushing it to the disk."""
    path, block = work / "flush-probe", b"\0" * (1 << 20)
    start = time.perf_counter()
    with open(path, "wb") as probe:
        for _ in range(256):
            probe.write(block)
        probe.flush()
        os.fdatasync(probe.fileno())
    elapsed = time.perf_counter() - start
    path.unlink()
    return (256 << 20) / elapsed


def sha256_rate() -> float:
    """Bytes per second SHA-256 digests here (best of three over 256 MB in 1 MB pieces)."""
    block, best = os.urandom(1 << 20), float("inf")
    for _ in range(3):
        digest, start = hashlib.sha256(), time.perf_counter()
        for _ in range(256):
            digest.update(block)
        best = min(best, time.perf_counter() - start)
    return (256 << 20) / best


def newline_count_rate() -> float:
    """Bytes per second ``bytes.count(b"\\n")`` counts line breaks here (best of three over
    256 MB of log lines in 1 MB pieces): spilling counts every byte's, for the record's
    line count and line index, holding the interpreter's lock."""
    block = (b"2026-11-29T12:00:00Z worker-042 INFO request handled\n" * 20000)[: 1 << 20]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(256):
            block.count(b"\n")
        best = min(best, time.perf_counter() - start)
    return (256 << 20) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1GB", help="input size (default 1GB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    parser.add_argument("--keep-lines", action="store_true",
                        help="also run with keep_lines = [] to measure what keep_lines costs")
    options = parser.parse_args()
    size = parse_size(options.size)
    work = Path(tempfile.mkdtemp(prefix="toolcap-bench-"))
    shm = Path("/dev/shm")
    memory = Path(tempfile.mkdtemp(prefix="toolcap-bench-", dir=shm)) if shm.is_dir() else None
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAP_")}
    env["TOOLCAP_ARTIFACTS"] = str(work / "artifacts")
    try:
        print(f"input: {human_size(size)} from a pipe of {human_size(CHUNK)}; best of "
              f"{options.repeat} (runs interleaved, so that a change of load hits every "
              "variant alike)")
        print(f"  disk flush rate here: {disk_flush_rate(work) / 1e6:.0f} MB/s "
              "(256 MB written, then fdatasync)")
        print(f"  SHA-256 rate here: {sha256_rate() / 1e6:.0f} MB/s (256 MB in memory; "
              "spilling hashes every byte once, and a partial artifact's stored bytes again)")
        print(f"  line break count rate here: {newline_count_rate() / 1e6:.0f} MB/s "
              "(bytes.count; spilling counts every byte's line breaks once)")
        off = work / "keep-lines-off.toml"
        off.write_text('[tools."*"]\nkeep_lines = []\n')
        variants = [("cat (baseline)", ["cat"], env),
                    ("toolcap cap --no-spill", [TOOLCAP, "cap", "--no-spill"], env),
                    ("toolcap cap, spill to disk", [TOOLCAP, "cap"], env)]
        in_memory = {**env, "TOOLCAP_ARTIFACTS": str(memory / "artifacts")} if memory else None
        if in_memory:
            variants.append(("toolcap cap, spill to tmpfs", [TOOLCAP, "cap"], in_memory))
        if options.keep_lines:
            variants.append(("  keep_lines = [] --no-spill", [TOOLCAP, "cap", "--no-spill"],
                             {**env, "TOOLCAP_CONFIG": str(off)}))
            if in_memory:
                variants.append(("  keep_lines = [] spill to tmpfs", [TOOLCAP, "cap"],
                                 {**in_memory, "TOOLCAP_CONFIG": str(off)}))
        times: dict[str, list[float]] = {label: [] for label, _, _ in variants}
        cpu: dict[str, list[float]] = {label: [] for label, _, _ in variants}
        for _ in range(options.repeat):
            for label, command, variant_env in variants:
                elapsed, used = pipe_through(command, size, variant_env)
                times[label].append(elapsed)
                cpu[label].append(used)
                shutil.rmtree(Path(variant_env["TOOLCAP_ARTIFACTS"]), ignore_errors=True)
        cat = min(times["cat (baseline)"])
        # The processor time of the consumer itself: with a pipe producer also running,
        # two cores cannot finish faster than about half of (its time + the producer's).
        print("  (cpu: processor seconds the consumer itself used, best run)")
        for label, _, _ in variants:
            seconds = min(times[label])
            rate = size / seconds / (1 << 20)
            print(f"  {label:<31} {seconds:7.2f} s  {rate:8.0f} MiB/s  ratio {cat / seconds:5.2f}"
                  f"  (median {statistics.median(times[label]):.2f} s,"
                  f" cpu {min(cpu[label]):.2f} s)")
        if options.keep_lines:
            pairs = [("--no-spill", "toolcap cap --no-spill", "  keep_lines = [] --no-spill")]
            if in_memory:
                pairs.append(("spill to tmpfs", "toolcap cap, spill to tmpfs",
                              "  keep_lines = [] spill to tmpfs"))
            for mode, on, plain in pairs:
                print(f"  keep_lines (built-in set) throughput, {mode}: "
                      f"{min(times[plain]) / min(times[on]):.2f} of keep_lines = []")
        startup = min(pipe_through([TOOLCAP, "cap", "--no-spill"], 0, env)[0]
                      for _ in range(options.repeat))
        print(f"  (of which toolcap's start-up, on empty input: {startup:.2f} s)")
        print("peak memory of toolcap cap (max RSS):")
        for peak_size in sorted({10 << 20, 100 << 20, size}):
            for label, args in (("--no-spill", ["--no-spill"]), ("spill", [])):
                rss = peak_rss(peak_size, args, env, work)
                shutil.rmtree(work / "artifacts", ignore_errors=True)
                print(f"  {human_size(peak_size):>9} {label:<11} {human_size(rss)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if memory:
            shutil.rmtree(memory, ignore_errors=True)


if __name__ == "__main__":
    main()
