"""What ``toolcap.compact`` costs: ratios against ``json.dumps`` measured in this run.

    python benchmarks/bench_compact.py [--messages 10000] [--output 2KB]

* ``nothing to mask``: ``compact`` of a conversation of ``--messages`` messages
  (assistant turns with one call each and their tool results of ``--output``),
  under its trigger, against one ``json.dumps`` of it, which the SDK does for
  every request anyway (goal: within 3x; the measure must not dominate).
* ``masking``: the same conversation with a trigger of a tenth of its outputs,
  in an in-memory store (first compaction, hashing and storing included), and
  again on its result (nothing left to do).
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Callable
from typing import Any

import toolcap
from toolcap import parse_size
from toolcap.store import MemoryStore


def best_of(function: Callable[[], object], repeat: int = 5) -> float:
    """Seconds per call: the best of ``repeat`` rounds of enough calls to last ~50 ms."""
    timer = timeit.Timer(function)
    calls, _ = timer.autorange()
    calls = max(1, calls // 4)
    return min(timer.repeat(repeat=repeat, number=calls)) / calls


def conversation(messages: int, output: int) -> list[dict[str, Any]]:
    line = "2026-11-29 12:00:00 INFO worker-7 processed request ✓ in 3ms\n"
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(messages // 2):
        call = f"call_{turn}"
        items.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "Read", "arguments": "{}"}}]})
        text = f"{turn}\n" + line * (output // len(line.encode()))
        items.append({"role": "tool", "tool_call_id": call, "content": text})
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--output", default="2KB")
    args = parser.parse_args()
    items = conversation(args.messages, parse_size(args.output))
    dumps = best_of(lambda: json.dumps(items))
    idle = best_of(lambda: toolcap.compact(items, trigger=1 << 40, store=MemoryStore()))
    print(f"nothing to mask  {len(items)} messages  compact {idle * 1e3:8.2f} ms"
          f"   json.dumps {dumps * 1e3:8.2f} ms   ratio {idle / dumps:5.2f}")
    total = toolcap.compact(items, trigger=1 << 40).report.before
    store = MemoryStore()
    first = best_of(lambda: toolcap.compact(items, trigger=total // 10, store=MemoryStore()), 3)
    result, report = toolcap.compact(items, trigger=total // 10, store=store)
    again = best_of(lambda: toolcap.compact(result, trigger=total // 10, store=store))
    print(f"masking          {len(report.masked)} outputs masked  first {first * 1e3:8.2f} ms"
          f" ({first / dumps:5.2f}x json.dumps)   again {again * 1e3:8.2f} ms"
          f" ({again / dumps:5.2f}x)")


if __name__ == "__main__":
    main()
