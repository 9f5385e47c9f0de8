"""What the conversation adapters cost over the seam itself: ratios measured in this run.

    python benchmarks/bench_adapters.py [--turns 200] [--result 5MB]

* ``bound``: ``bound_chat_messages`` on a conversation whose latest turn holds
  three results (one of ``--result``), against ``Policy.finalize`` on the same
  three texts (goal: within 2x; the adapter only finds and rebuilds, a fixed
  cost of some microseconds whatever the result's size).
* ``guard``: ``guard_chat_messages`` on an already bounded history of
  ``--turns`` turns, against ``json.dumps`` of the same messages, which the SDK
  does for every request anyway (goal: below 1x).
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Callable
from typing import Any

from toolcap import Config, Policy, ToolResponse, parse_size
from toolcap.adapters.openai import bound_chat_messages, guard_chat_messages


def best_of(function: Callable[[], object], repeat: int = 5) -> float:
    """Seconds per call: the best of ``repeat`` rounds of enough calls to last ~50 ms."""
    timer = timeit.Timer(function)
    calls, _ = timer.autorange()
    calls = max(1, calls // 4)
    return min(timer.repeat(repeat=repeat, number=calls)) / calls


def turn(index: int, outputs: list[str]) -> list[dict[str, Any]]:
    ids = [f"call_{index}_{n}" for n in range(len(outputs))]
    calls = [{"id": i, "type": "function", "function": {"name": "Read", "arguments": "{}"}}
             for i in ids]
    return [{"role": "assistant", "content": None, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": i, "content": out}
              for i, out in zip(ids, outputs, strict=True))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--result", default="5MB")
    args = parser.parse_args()
    policy = Policy(Config(), sink=None, notices=False)  # no store: measure the seam, not disk
    line = "2026-11-29 12:00:00 INFO worker-7 processed request id=12345 in 3ms\n"
    big = line * (parse_size(args.result) // len(line))
    outputs = [big, "3 matches\n", line * 100]

    conversation = [{"role": "user", "content": "go"}, *turn(0, outputs)]
    adapter = best_of(lambda: bound_chat_messages(conversation, policy))
    seam = best_of(lambda: policy.finalize([ToolResponse("Read", o) for o in outputs]))
    print(f"bound  {args.result:>6} latest turn   adapter {adapter * 1e3:8.3f} ms"
          f"   finalize {seam * 1e3:8.3f} ms   ratio {adapter / seam:5.2f}")

    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for index in range(args.turns):
        history += turn(index, [line * 400, line * 20])  # 27 KB + 1.4 KB: already bounded
    guard = best_of(lambda: guard_chat_messages(history, policy))
    dumps = best_of(lambda: json.dumps(history))
    print(f"guard  {args.turns:>6} turns         guard   {guard * 1e3:8.3f} ms"
          f"   json.dumps {dumps * 1e3:6.3f} ms   ratio {guard / dumps:5.2f}")


if __name__ == "__main__":
    main()
