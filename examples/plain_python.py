"""Plain Python tools with toolcap: one decorator, sync or async, ``str`` or ``bytes``.

    python examples/plain_python.py
"""

from __future__ import annotations

import asyncio
import subprocess

import toolcap
from toolcap import bounded


@bounded(tool="Read")  # [tools.Read] in toolcap.toml sets its size_threshold
def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


@bounded(tool="Bash")
def bash(command: str) -> bytes:
    return subprocess.run(command, shell=True, capture_output=True, check=False).stdout


@bounded(tool="Fetch")
async def fetch(n: int) -> str:
    await asyncio.sleep(0)
    return "<p>row</p>\n" * n


print("read:", len(read(toolcap.__file__)), "characters")
print("bash:", len(bash("seq 1 1000000")), "bytes")
print("fetch:", len(asyncio.run(fetch(500_000))), "characters")
