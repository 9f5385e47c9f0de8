"""How cap_text's cost grows with the input: ratios against baselines measured in this run.

    python benchmarks/bench_cut.py [--sizes 1MB,100MB,1GB] [--limit 32KB] [--before SRC]

For ``bytes`` and ASCII ``str`` the baseline is copying just the kept bytes
(goal: within 5x, whatever the input size). For non-ASCII ``str`` it is one
``str.encode`` pass over the input (goal: within 2x). The ``decode`` column is
the least any cut of ``bytes`` must do: decode the kept bytes into a ``str``
(for CJK text that alone is many times a copy). ``--before SRC`` runs the same
table first with the toolcap found in ``SRC`` (for example an export of main's
``src``), so both are measured in one run on the same machine.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import timeit
from collections.abc import Callable

from toolcap import cap_text, parse_size


def best_of(function: Callable[[], object], repeat: int) -> float:
    """Seconds per call: the best of ``10 * repeat`` rounds of calls lasting ~2 ms each.

    Short rounds, many of them: on a machine shared with other work, the best
    round is one that no other process interrupted, and both sides of a ratio
    are measured the same way.
    """
    timer = timeit.Timer(function)
    calls, _ = timer.autorange()
    calls = max(1, calls // 100)
    return min(timer.repeat(repeat=10 * repeat, number=calls)) / calls


def make_input(kind: str, size: int) -> str | bytes:
    if kind.startswith("ascii"):
        line = b"2026-11-29 12:00:00 INFO worker-7 processed request id=12345 in 3ms\n"
        data = line * (size // len(line) + 1)
        data = data[:size]
        return data if kind == "ascii-bytes" else data.decode("ascii")
    unit = "日本語のログ出力、エラーなし。\n"
    text = unit * (size // len(unit.encode()) + 1)
    return text.encode() if kind == "cjk-bytes" else text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1MB,100MB,1GB")
    parser.add_argument("--limit", default="32KB")
    parser.add_argument("--before", help="a src directory to measure first, as 'before'")
    parser.add_argument("--label", default="after", help=argparse.SUPPRESS)
    args = parser.parse_args()
    limit = parse_size(args.limit)
    if args.label == "after":
        print(f"cap_text to {args.limit}; time ratio = cap_text / baseline (lower is better)\n")
        print(f"{'':>6} {'input':>16} {'size':>7} {'cap_text':>11} {'baseline':>20} {'ratio':>8}"
              f" {'goal':>6} {'decode':>8}")
    if args.before:
        environment = dict(os.environ, PYTHONPATH=args.before)
        subprocess.run([sys.executable, __file__, "--sizes", args.sizes, "--limit", args.limit,
                        "--label", "before"], env=environment, check=True)
    for size_text in args.sizes.split(","):
        size = parse_size(size_text)
        for kind in ("ascii-bytes", "ascii-str", "cjk-bytes", "cjk-str"):
            try:
                data = make_input(kind, size)
            except MemoryError:
                print(f"{kind:>16} {size_text:>7}  skipped: not enough memory")
                continue
            repeat = 5 if size <= 100 * 1024 * 1024 else 2
            result = cap_text(data, limit)
            capped = best_of(lambda data=data: cap_text(data, limit), repeat)  # type: ignore[misc]
            decoding = ""
            if kind == "cjk-str":
                assert isinstance(data, str)
                name, goal = "one str.encode", "2x"
                baseline = best_of(lambda data=data: data.encode("utf-8"), repeat)  # type: ignore[misc]
            else:
                kept = result.kept_bytes
                name, goal = f"copy {kept} bytes", "5x"
                baseline = best_of(lambda data=data, kept=kept: data[: kept // 5] + data[-kept:],  # type: ignore[misc]
                                   repeat)
                if isinstance(data, bytes):
                    floor = best_of(lambda data=data, kept=kept: data[-kept:].decode(  # type: ignore[misc]
                        "utf-8", "ignore"), repeat)
                    decoding = f"{floor / baseline:7.2f}x"
            ratio = capped / baseline
            print(f"{args.label:>6} {kind:>16} {size_text:>7} {capped * 1e6:9.1f}us {name:>20}"
                  f" {ratio:7.2f}x {goal:>6} {decoding:>8}", flush=True)
            del data
            gc.collect()


if __name__ == "__main__":
    main()
