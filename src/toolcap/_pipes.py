"""Pipes: the one setting ``toolcap cap`` (its standard input), ``run`` (its child's
output) and the proxy (its stdio upstream's output) make, in a module light enough
for a command's start-up."""

from __future__ import annotations

import contextlib
import os
import stat

__all__ = ["PIPE_MAX_SIZE_FILE", "widen_pipe"]

#: Where Linux says how large an unprivileged process may make a pipe.
PIPE_MAX_SIZE_FILE = "/proc/sys/fs/pipe-max-size"


def widen_pipe(fd: int, size: int) -> None:
    """Let the pipe ``fd`` hold ``size`` bytes (Linux), or as many as the system lets
    a process ask for, if fewer: fewer, larger reads and writes.

    Best effort: not a pipe, another system, or no larger pipe allowed, nothing changes.
    """
    with contextlib.suppress(OSError, ImportError, AttributeError, ValueError):
        import fcntl

        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        set_size = getattr(fcntl, "F_SETPIPE_SZ", 1031)
        try:
            fcntl.fcntl(fd, set_size, size)
        except PermissionError:  # over the limit for this user: ask for the limit
            with open(PIPE_MAX_SIZE_FILE, "rb") as limit:
                allowed = int(limit.read())
            if allowed < size:
                fcntl.fcntl(fd, set_size, allowed)
