"""The structural JSON cut against one ``json.loads`` of the same document, in one run.

    .venv/bin/python benchmarks/bench_jsoncut.py            # 10 MB and 100 MB documents
    .venv/bin/python benchmarks/bench_jsoncut.py --quick    # 10 MB only
    .venv/bin/python benchmarks/bench_jsoncut.py --pointer  # reads by pointer, 50 MB

For each document (an issue list, compact and indented), prints the best of a few
timings of ``cut_json(text, 32 KB)`` (detection, parse, cut) and of
``json.loads(text)``, and their ratio (goal: within 2x of one parse). The cut's
work beyond the parse is O(budget x depth), so the ratio stays flat with size.

toolcap cuts documents of at most 64 MB by structure (larger ones get the text
cut); the benchmark lifts that bound to measure the cut itself at 100 MB.

``--pointer`` stores a 50 MB issue list (compact) in a local store and reads one
item near the end of its array by pointer, through the index the put kept,
against today's read without one (the whole original read and parsed), and
prints what the index costs a put (its walk against one ``json.loads``), for
that document and for three other shapes of the same size.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from toolcap.core import _jsondoc, _jsonindex
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
    parser.add_argument("--pointer", action="store_true", help="reads by pointer, 50 MB")
    args = parser.parse_args()
    if args.pointer:
        pointer_reads(50 * MB)
        return
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

def pointer_reads(size: int) -> None:
    """Time a read of one item near the end of a stored document, with and without its index."""
    import tempfile

    from toolcap.core._jsonpart import select_stored
    from toolcap.store import LocalStore

    text = document(size, None)
    data = text.encode()
    last = json.loads(text)["total_count"] - 2
    where = f"/items/{last}"
    with tempfile.TemporaryDirectory() as root:
        store = LocalStore(Path(root) / "artifacts")
        ref = store.put(data)
        info = store.stat(ref)
        assert info.json_index is not None

        def read(low: int, high: int) -> bytes:
            return store.read_bytes(ref, low, high - low)

        def indexed() -> tuple[str, str]:
            return select_stored(store.stat(ref).json_index, read, info.bytes, where)

        def whole() -> tuple[str, str]:  # what a read costs without an index
            return select_stored(None, read, info.bytes, where)

        assert indexed() == whole()
        fast = best(indexed, 20)
        slow = best(whole, 2)
        walk = best(lambda: _jsonindex.index_of(data), 2)
        parse = best(lambda: json.loads(text), 2)
    print(f"{human_size(len(data))} array, read of {where}")
    print(f"{'whole parse':<16} {slow:>9.4f}s")
    print(f"{'through index':<16} {fast:>9.4f}s   {slow / fast:>8.0f}x cheaper")
    print(f"{'index at put':<16} {walk:>9.4f}s   {walk / parse:>8.2f}x one json.loads"
          f" ({parse:.3f}s)")
    # What the index costs a put for other shapes, against one json.loads of each.
    shapes = {"array of numbers": json.dumps(list(range(size // 9))),
              "array of strings": json.dumps([f"s{i}" for i in range(size // 12)]),
              "object, many keys": json.dumps({f"k{i}": i for i in range(size // 14)})}
    for name, shape in shapes.items():
        shape_data = shape.encode()
        walk = best(lambda data=shape_data: _jsonindex.index_of(data), 2)
        parse = best(lambda text=shape: json.loads(text), 2)
        print(f"{name:<18} {human_size(len(shape_data))}: index at put {walk / parse:.2f}x"
              " one json.loads")


if __name__ == "__main__":
    main()
