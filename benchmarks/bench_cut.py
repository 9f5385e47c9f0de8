"""How cap_text's cost grows with the input: ratios against baselines measured in this run.

    python benchmarks/bench_cut.py [--sizes 1MB,100MB,1GB] [--limit 32KB]

For ``bytes`` and ASCII ``str`` the baseline is copying just the kept bytes
(goal: within 5x at 100 MB, whatever the input size). For non-ASCII ``str`` it is
one ``str.encode`` pass over the input (goal: within 2x).
"""

from __future__ import annotations

import argparse
import gc
import timeit
from collections.abc import Callable

from toolcap import cap_text, parse_size


def best_of(function: Callable[[], object], repeat: int) -> float:
    """Seconds per call: the best of ``repeat`` rounds of enough calls to last ~50 ms."""
    timer = timeit.Timer(function)
    calls, _ = timer.autorange()
    calls = max(1, calls // 4)
    return min(timer.repeat(repeat=repeat, number=calls)) / calls


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
    args = parser.parse_args()
    limit = parse_size(args.limit)
    print(f"cap_text to {args.limit}; time ratio = cap_text / baseline (lower is better)\n")
    print(f"{'input':>16} {'size':>7} {'cap_text':>11} {'baseline':>20} {'ratio':>8}")
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
            if kind == "cjk-str":
                assert isinstance(data, str)
                name = "one str.encode"
                baseline = best_of(lambda data=data: data.encode("utf-8"), repeat)  # type: ignore[misc]
            else:
                kept = result.kept_bytes
                name = f"copy {kept} bytes"
                baseline = best_of(lambda data=data, kept=kept: data[: kept // 5] + data[-kept:],  # type: ignore[misc]
                                   repeat)
            ratio = capped / baseline
            print(f"{kind:>16} {size_text:>7} {capped * 1e6:9.1f}us {name:>20} {ratio:7.2f}x")
            del data
            gc.collect()


if __name__ == "__main__":
    main()
