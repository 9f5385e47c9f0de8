"""A line goes to a stdio upstream from the HTTP server's own loop only when it cannot
block that loop: the pipe has room for it, no other thread is writing, and it is
small enough to go in one write that never waits (PIPE_BUF)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import threading
from collections.abc import Iterator

from toolcap.proxy._io import FdWriter
from toolcap.proxy._sessions import RelaySession


@contextlib.contextmanager
def _pipe() -> Iterator[tuple[int, FdWriter]]:
    read_end, write_end = os.pipe()
    writer = FdWriter(write_end)
    try:
        yield read_end, writer
    finally:
        writer.close()
        os.close(read_end)


def _fill(fd: int) -> None:
    """Write to ``fd`` until its pipe is full."""
    os.set_blocking(fd, False)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except BlockingIOError:
        pass
    finally:
        os.set_blocking(fd, True)


def test_a_small_line_to_a_pipe_with_room_is_written_at_once() -> None:
    with _pipe() as (read_end, writer):
        with writer.held_if_ready(100) as ready:
            assert ready
            writer.write_line(b"y" * 100)  # re-enters the hold: no deadlock
        assert os.read(read_end, 1000) == b"y" * 100 + b"\n"


def test_a_full_pipe_is_not_ready() -> None:
    with _pipe() as (_, writer):
        _fill(writer._fd)
        with writer.held_if_ready(10) as ready:
            assert not ready


def test_a_line_that_may_need_more_than_one_write_is_never_ready() -> None:
    with _pipe() as (_, writer):
        with writer.held_if_ready(select.PIPE_BUF) as ready:
            assert not ready
        with writer.held_if_ready(select.PIPE_BUF - 1) as ready:
            assert ready


def test_a_pipe_another_thread_is_writing_to_is_not_ready() -> None:
    with _pipe() as (_, writer):
        holding, done = threading.Event(), threading.Event()

        def hold() -> None:
            with writer.held_if_ready(10):
                holding.set()
                done.wait(10)

        thread = threading.Thread(target=hold)
        thread.start()
        try:
            assert holding.wait(10)
            with writer.held_if_ready(10) as ready:
                assert not ready
        finally:
            done.set()
            thread.join(10)
        with writer.held_if_ready(10) as ready:
            assert ready


def test_a_closed_writer_is_not_ready() -> None:
    with _pipe() as (_, writer):
        writer.close()
        with writer.held_if_ready(10) as ready:
            assert not ready


class _Upstream:
    """A stdio upstream as a session sees it: a line goes from the loop when it is
    under PIPE_BUF (the sizes asked for are kept), and what is sent is kept."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.sent: list[bytes] = []

    @contextlib.contextmanager
    def ready_to_send(self, size: int) -> Iterator[bool]:
        self.asked.append(size)
        yield size < select.PIPE_BUF

    def send(self, line: bytes) -> None:
        self.sent.append(line)

    def run(self, *args: object, **kwargs: object) -> None: ...


@contextlib.contextmanager
def _session() -> Iterator[tuple[_Upstream, RelaySession]]:
    """A session of its relay not started: what goes to its thread stays queued."""
    loop = asyncio.new_event_loop()
    upstream = _Upstream()
    try:
        yield upstream, RelaySession(upstream, None, loop,  # type: ignore[arg-type]
                                     lambda line: None, lambda: None)
    finally:
        loop.close()


def test_a_batch_never_takes_the_way_from_the_loop() -> None:
    # The relay may write a batch longer than it came (what the proxy answers itself
    # leaves it, the rest serialized again): it goes through the relay's own thread.
    batch = b' [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]'
    with _session() as (upstream, session):
        assert session.send(batch)
        assert upstream.asked == []
        assert upstream.sent == []
        assert session._reader.readline() == batch


def test_a_small_message_behind_one_still_queued_waits_its_turn() -> None:
    # A message the relay's thread has not handled yet is ahead: the next one, small
    # as it is, must not overtake it by the way from the loop.
    big = b'{"jsonrpc": "2.0", "method": "notifications/big", "params": {"x": "' + (
        b"y" * select.PIPE_BUF) + b'"}}'
    small = b'{"jsonrpc": "2.0", "method": "notifications/small"}'
    with _session() as (upstream, session):
        assert session.send(small)  # nothing ahead: on its way at once
        assert upstream.sent == [small]
        assert session.send(big)  # too big for one write: the relay's thread takes it
        assert session.send(small)  # behind it, in order
        assert upstream.sent == [small]
        assert session._reader.readline() == big
