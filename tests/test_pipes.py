"""Pipes widened for fewer, larger reads: to the size asked for, or to the system's limit."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from pathlib import Path

import pytest

from toolcap import _pipes
from toolcap._pipes import widen_pipe
from toolcap.proxy._upstream import UPSTREAM_PIPE, StdioUpstream

F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="pipe sizes are Linux's")


def pipe_size(fd: int) -> int:
    return fcntl.fcntl(fd, F_GETPIPE_SZ)


def test_a_pipe_is_widened_to_the_size_asked_for() -> None:
    read_end, write_end = os.pipe()
    try:
        widen_pipe(read_end, 1 << 20)
        assert pipe_size(write_end) == 1 << 20  # one pipe: both ends see it
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_size_over_the_users_limit_gets_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process without the privilege to pass /proc/sys/fs/pipe-max-size gets EPERM
    # for more; the limit itself is allowed. Here the limit is a file of ours.
    limit = tmp_path / "pipe-max-size"
    limit.write_text("131072\n")
    monkeypatch.setattr(_pipes, "PIPE_MAX_SIZE_FILE", str(limit))
    real = fcntl.fcntl

    def unprivileged(fd: int, command: int, arg: int = 0) -> int:
        if command == getattr(fcntl, "F_SETPIPE_SZ", 1031) and arg > 131072:
            raise PermissionError(1, "Operation not permitted")
        return real(fd, command, arg)

    monkeypatch.setattr(fcntl, "fcntl", unprivileged)
    read_end, write_end = os.pipe()
    try:
        widen_pipe(read_end, 1 << 20)
        assert pipe_size(read_end) == 131072
    finally:
        os.close(read_end)
        os.close(write_end)


def test_what_is_not_a_pipe_is_left_alone(tmp_path: Path) -> None:
    with open(tmp_path / "file", "wb") as file:
        widen_pipe(file.fileno(), 1 << 20)  # no error, nothing to change
    widen_pipe(-1, 1 << 20)  # nor for a closed descriptor


@pytest.mark.parametrize("wide", [True, False])
def test_the_proxys_stdio_upstream_writes_into_a_one_megabyte_pipe_unless_one_of_many(
    wide: bool,
) -> None:
    # The server itself reports the size of the pipe its stdout is. Under --listen
    # (a server a session) it keeps the default: each wide pipe takes from the user's
    # budget of pipe memory.
    script = "import fcntl; print(fcntl.fcntl(1, 1032), flush=True); input()"
    upstream = StdioUpstream([sys.executable, "-c", script], wide_stdout=wide)
    upstream.start()
    lines: list[bytes] = []
    got = threading.Event()

    def on_line(holder: list[bytes | bytearray]) -> None:
        lines.append(bytes(holder.pop()))
        got.set()

    try:
        upstream.run(on_line, lambda: None)
        assert got.wait(30)
        assert int(lines[0]) == (UPSTREAM_PIPE if wide else 64 << 10)
        assert UPSTREAM_PIPE == 1 << 20
    finally:
        upstream.stop(grace=5)
