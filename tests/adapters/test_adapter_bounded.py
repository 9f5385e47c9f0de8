"""``@bounded`` on plain Python tool functions: sync and async, ``str`` and ``bytes``."""

from __future__ import annotations

import asyncio
import inspect

from toolcap import Config, Policy
from toolcap.adapters._decorator import bound_output, bounded
from toolcap.store import MemoryStore

KB = 1024
BIG = "row 0123456789 ✓\n" * 400_000


def test_a_large_str_result_is_bounded_and_kept(policy: Policy, store: MemoryStore) -> None:
    @bounded(tool="Read", policy=policy)
    def read(path: str) -> str:
        """Read a file."""
        return BIG

    text = read("big.txt")
    assert isinstance(text, str) and len(text.encode("utf-8")) <= 32 * KB
    assert store.read_bytes(text.split("full output: ")[1].split(".")[0]) == BIG.encode()
    assert read.__name__ == "read" and read.__doc__ == "Read a file."
    assert list(inspect.signature(read).parameters) == ["path"]


def test_bytes_stay_bytes_and_small_results_are_the_same_object(policy: Policy) -> None:
    small = b"fits"

    @bounded(tool="Cat", policy=policy)
    def cat(big: bool) -> bytes:
        return BIG.encode() if big else small

    assert cat(False) is small
    out = cat(True)
    assert isinstance(out, bytes) and len(out) <= 32 * KB
    out.decode("utf-8")  # still valid UTF-8


def test_async_tools_stay_coroutine_functions() -> None:
    policy = Policy(Config(tools={"fetch": "8KB"}), sink=None, notices=False)

    @bounded(policy=policy)  # the policy name defaults to the function's name
    async def fetch() -> str:
        return BIG

    assert inspect.iscoroutinefunction(fetch)
    assert len(asyncio.run(fetch()).encode()) <= 8 * KB


def test_bare_decorator_and_other_values_pass(policy: Policy) -> None:
    @bounded
    def structured() -> dict[str, int]:
        return {"rows": 3}

    assert structured() == {"rows": 3}
    value = object()
    assert bound_output(value, tool="x", policy=policy) is value
