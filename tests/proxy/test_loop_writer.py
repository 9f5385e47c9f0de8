"""The lines a session's relay writes reach the client's streams in the order written:
at once when written on the server's loop with nothing else on its way, after the
lines other threads wrote before them otherwise."""

from __future__ import annotations

import asyncio
import threading

import pytest

from toolcap.proxy._io import WriterClosed
from toolcap.proxy._sessions import _LoopWriter


def test_a_line_written_on_the_loop_is_handed_on_at_once() -> None:
    async def run() -> list[bytes]:
        got: list[bytes] = []
        writer = _LoopWriter(asyncio.get_running_loop(), got.append)
        writer.write_line(b"a")
        seen_at_once = list(got)
        await asyncio.sleep(0)
        return seen_at_once

    assert asyncio.run(run()) == [b"a"]


def test_a_line_from_the_loop_goes_after_one_another_thread_wrote_before_it() -> None:
    async def run() -> list[bytes]:
        got: list[bytes] = []
        handed = asyncio.Event()
        writer = _LoopWriter(asyncio.get_running_loop(),
                             lambda line: (got.append(line), handed.set()))
        other = threading.Thread(target=writer.write_line, args=(b"from a thread",))
        other.start()
        other.join()  # its line is on its way, not yet handed on: the loop has not run
        writer.write_line(b"from the loop")
        writer.write_line(b"and the next")
        assert got == []
        while len(got) < 3:
            handed.clear()
            await handed.wait()
        writer.write_line(b"then at once again")
        return got

    assert asyncio.run(run()) == [b"from a thread", b"from the loop", b"and the next",
                                  b"then at once again"]


def test_a_closed_writer_refuses_lines() -> None:
    async def run() -> None:
        writer = _LoopWriter(asyncio.get_running_loop(), lambda line: None)
        writer.close()
        with pytest.raises(WriterClosed):
            writer.write_line(b"late")

    asyncio.run(run())
