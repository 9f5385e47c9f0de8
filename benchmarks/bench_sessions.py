"""``toolcap compact`` and ``toolcap repair`` on a large saved session, against ``cat``.

    python benchmarks/bench_sessions.py [--size 1GB] [--format claude|codex] [--dir DIR]

Writes a session of about ``--size`` in the agent's own format (Claude Code
transcript records with ``toolUseResult`` copies, or Codex CLI rollout records):
tool outputs from 1 KB to 256 KB, and every 500th one 5 MB. Then runs, each in a
fresh process whose peak RSS is read with ``getrusage(RUSAGE_CHILDREN)``:

* ``cat FILE > /dev/null``: the baseline, reading the file once;
* ``toolcap compact FILE --target 1MB -o OUT`` (originals stored in a fresh local
  store: artifact writes included);
* ``toolcap repair FILE --over 64KB -o OUT`` (likewise).

Prints seconds, throughput in MB/s, the ratio of time to ``cat``'s and the peak
RSS of each. The goal: under 200 MB of RSS for a 1 GB session.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from toolcap import parse_size

_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "status = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], 'wb')).returncode\n"
    "took = time.perf_counter() - start\n"
    "print(status, took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _output(number: int) -> str:
    size = 5 << 20 if number % 500 == 499 else 1024 << (number % 9)
    line = f"{number:07d} 2026-11-29 12:00:00 INFO worker-7 request ✓ done in 3ms\n"
    return (line * (size // len(line.encode()) + 1))[: size // 1]


def _records(kind: str, number: int) -> list[dict[str, Any]]:
    text = _output(number)
    call_id = f"toolu_{number:010d}" if kind == "claude" else f"call_{number:010d}"
    if kind == "claude":
        return [
            {"parentUuid": None, "type": "assistant", "uuid": f"a{number}", "message": {
                "role": "assistant", "content": [{"type": "tool_use", "id": call_id,
                                                  "name": "Bash", "input": {"command": "x"}}]}},
            {"parentUuid": f"a{number}", "type": "user", "uuid": f"u{number}", "message": {
                "role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result",
                                             "content": text}]},
             "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False,
                               "isImage": False}},
        ]
    return [
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": "{}", "call_id": call_id}},
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": call_id, "output": text}},
    ]


def write_session(path: Path, size: int, kind: str) -> int:
    """Write records until the file is ``size`` bytes or more; the number of outputs."""
    written = number = 0
    with path.open("w", encoding="utf-8") as stream:
        while written < size:
            for record in _records(kind, number):
                line = json.dumps(record, ensure_ascii=False) + "\n"
                stream.write(line)
                written += len(line.encode())
            number += 1
    return number


def run(command: list[str], out: Path) -> tuple[int, float, int]:
    """(exit status, seconds, peak RSS in KB) of ``command`` in a fresh process."""
    result = subprocess.run([sys.executable, "-c", _MEASURE, str(out), *command],
                            capture_output=True, check=True, text=True)
    status, seconds, peak = result.stdout.split()
    return int(status), float(seconds), int(peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--format", choices=["claude", "codex"], default="claude")
    parser.add_argument("--dir", help="where to write the session (default: a temporary one)")
    args = parser.parse_args()
    toolcap = shutil.which("toolcap", path=str(Path(sys.executable).parent)) or "toolcap"
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        root = Path(folder)
        session = root / "session.jsonl"
        outputs = write_session(session, parse_size(args.size), args.format)
        size = session.stat().st_size
        print(f"session: {size / 1e6:.0f} MB, {outputs} tool outputs ({args.format})")
        rows = [
            ("cat", ["cat", str(session)]),
            ("toolcap compact", [toolcap, "compact", str(session), "--target", "1MB",
                                 "--artifacts", str(root / "store-compact"),
                                 "-o", str(root / "compacted.jsonl")]),
            ("toolcap repair", [toolcap, "repair", str(session), "--over", "64KB",
                                "--artifacts", str(root / "store-repair"),
                                "-o", str(root / "repaired.jsonl")]),
        ]
        base = None
        for name, command in rows:
            status, seconds, peak = run(command, root / "stdout")
            base = base or seconds
            print(f"{name:16} {seconds:8.2f} s  {size / 1e6 / seconds:8.1f} MB/s  "
                  f"x{seconds / base:7.1f} cat  peak RSS {peak / 1024:7.1f} MB"
                  + ("" if status == 0 else f"  (exit {status})"))


if __name__ == "__main__":
    main()
