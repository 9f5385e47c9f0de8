"""JSON-byte projection and sizing, against the obvious approaches, measured in one run.

    .venv/bin/python benchmarks/bench_json.py            # 1 MB and 100 MB inputs
    .venv/bin/python benchmarks/bench_json.py --quick    # 1 MB only

Prints, for each input, the best of several timings of:

* ``project_json_text(text, 65536)`` against the obvious projection: serialize
  the whole input to learn its size, then bisect the head and tail cuts, each
  probe serializing a candidate prefix or suffix (ratio = obvious / toolcap);
* ``json_size(text)`` against ``len(json.dumps(text).encode())`` and against
  ``len(json.dumps(text, ensure_ascii=False).encode())``, which is the size
  json_size reports (ratio = baseline / toolcap: above 1 means faster).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolcap.core._json import (
    DEFAULT_WIRE_MARKER,
    json_size,
    project_json_text,
)
from toolcap.core._sizes import human_size

BUDGET = 65536
MB = 1 << 20

PATTERNS = {
    # A log-like text: mostly plain, one newline per line.
    "ascii": "2026-11-29T12:00:00Z INFO worker-7 processed batch 1234 in 56 ms\n",
    # Quotes, backslashes, newlines, tabs and control characters: grows up to 6x.
    "escape-heavy": 'C:\\path\\to\\"file"\t\x01\x02\n{"k": "v\\n"}\x1f\r\n',
    # Three bytes per character.
    "cjk": "東京都の天気は晴れ、最高気温は二十度です。明日も晴れるでしょう。\n",
}


def make_text(pattern: str, size: int) -> str:
    """About ``size`` UTF-8 bytes of ``pattern`` repeated."""
    unit = len(pattern.encode("utf-8"))
    return pattern * (size // unit + 1)


def wire_size(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def obvious_projection(text: str, budget: int) -> str:
    """Serialize everything, then bisect each cut, serializing every candidate."""
    if wire_size(text) <= budget:
        return text
    original = len(text.encode("utf-8"))
    marker = DEFAULT_WIRE_MARKER.format(
        omitted=human_size(original), original=human_size(original), budget=human_size(budget),
        where="",
    )
    room = budget - wire_size(marker)
    head_budget = room // 5
    low, high = 0, len(text)
    while low < high:  # the longest prefix within head_budget
        middle = (low + high + 1) // 2
        if wire_size(text[:middle]) - 2 <= head_budget:
            low = middle
        else:
            high = middle - 1
    head = low
    tail_budget = room - (wire_size(text[:head]) - 2)
    low, high = 0, len(text) - head
    while low < high:  # the longest suffix within what is left
        middle = (low + high + 1) // 2
        if wire_size(text[len(text) - middle :]) - 2 <= tail_budget:
            low = middle
        else:
            high = middle - 1
    return text[:head] + marker + text[len(text) - low :]


def best_of(repeats: int, function: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MB inputs only")
    args = parser.parse_args()
    sizes = [1 * MB] if args.quick else [1 * MB, 100 * MB]

    print(f"budget {BUDGET} JSON bytes; times are the best of several runs\n")
    header = (
        f"{'input':<22}{'toolcap':>11}{'obvious':>11}{'ratio':>9}"
        f"{'json_size':>12}{'dumps()':>11}{'ratio':>8}{'dumps(F)':>11}{'ratio':>8}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        repeats = 7 if size <= MB else 3
        for name, pattern in PATTERNS.items():
            text = make_text(pattern, size)
            label = f"{name} {size // MB} MB"

            projected = project_json_text(text, BUDGET)
            expected = obvious_projection(text, BUDGET)
            assert json_size(projected) <= BUDGET and wire_size(expected) <= BUDGET
            assert json_size(text) == wire_size(text)

            ours = best_of(repeats, lambda t=text: project_json_text(t, BUDGET))
            once = 1 if size > MB else repeats  # the obvious way takes seconds at 100 MB
            theirs = best_of(once, lambda t=text: obvious_projection(t, BUDGET))
            sized = best_of(repeats, lambda t=text: json_size(t))
            dumped = best_of(repeats, lambda t=text: len(json.dumps(t).encode()))
            dumped_f = best_of(repeats, lambda t=text: wire_size(t))
            print(
                f"{label:<22}{ours * 1e3:>9.2f}ms{theirs * 1e3:>9.1f}ms{theirs / ours:>8.0f}x"
                f"{sized * 1e3:>10.2f}ms{dumped * 1e3:>9.2f}ms{dumped / sized:>7.2f}x"
                f"{dumped_f * 1e3:>9.2f}ms{dumped_f / sized:>7.2f}x"
            )
    print(
        "\nratio columns: baseline time / toolcap time (above 1 = toolcap faster)."
        "\ndumps() = len(json.dumps(s).encode()); dumps(F) = the same with ensure_ascii=False."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
