"""The structural JSON cut against one ``json.loads`` of the same document, in one run.

    .venv/bin/python benchmarks/bench_jsoncut.py            # 10 MB and 100 MB documents
    .venv/bin/python benchmarks/bench_jsoncut.py --quick    # 10 MB only

For each document (an issue list, compact and indented), prints the best of a few
timings of ``cut_json(text, 32 KB)`` (detection, parse, cut) and of
``json.loads(text)``, and their ratio (goal: within 2x of one parse). The cut's
work beyond the parse is O(budget x depth), so the ratio stays flat with size.

toolcap cuts documents of at most 64 MB by structure (larger ones get the text
cut); the benchmark lifts that bound to measure the cut itself at 100 MB.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolcap.core import _jsondoc
from toolcap.core._jsoncut import cut_json
from toolcap.core._sizes import human_size

LIMIT = 32 * 1024
MB = 1 << 20


def document(size: int, indent: int | None) -> str:
    """An issue-list document of about ``size`` bytes."""
    record = {"id": 123456, "number": 42, "title": "Crash on \"save\" with ünïcode ✓",
              "state": "open", "user": {"login": "someone", "id": 5150, "site_admin": False},
              "labels": [{"name": "bug", "color": "d73a4a"}], "comments": 7, "score": 12.5,
              "body": "Steps:\n1. open\n2. save\n\tthen C:\\path\\to\\file fails"}
    unit = len(json.dumps(record, indent=indent, ensure_ascii=False).encode())
    count = size // unit
    return json.dumps({"total_count": count, "items": [dict(record, number=i)
                                                        for i in range(count)]},
                      indent=indent, ensure_ascii=False)


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 MB only")
    args = parser.parse_args()
    sizes = [10 * MB] if args.quick else [10 * MB, 100 * MB]
    _jsondoc.MAX_STRUCTURAL_BYTES = 1 << 40  # measure the algorithm past the product bound
    print(f"{'document':<28} {'json.loads':>11} {'cut_json':>10} {'ratio':>6}")
    for size in sizes:
        for indent in (None, 2):
            measure(document(size, indent), indent, 3 if size <= 10 * MB else 2)


def measure(text: str, indent: int | None, repeat: int) -> None:
    """Time one parse and one cut of ``text`` and print the line."""
    parse = best(lambda: json.loads(text), repeat)
    result = cut_json(text, LIMIT)
    assert result is not None and result.kept_bytes <= LIMIT
    json.loads(result.text)
    cut = best(lambda: cut_json(text, LIMIT), repeat)
    name = f"{human_size(len(text.encode()))} {'indented' if indent else 'compact'}"
    print(f"{name:<28} {parse:>10.3f}s {cut:>9.3f}s {cut / parse:>5.2f}x")

if __name__ == "__main__":
    main()
