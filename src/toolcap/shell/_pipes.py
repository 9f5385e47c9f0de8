"""Pipes: the one setting both ``toolcap cap`` (its standard input) and ``run`` (its
child's output) make, in a module light enough for a command's start-up."""

from __future__ import annotations

import contextlib
import os
import stat

__all__ = ["widen_pipe"]


def widen_pipe(fd: int, size: int) -> None:
    """Let the pipe ``fd`` hold ``size`` bytes (Linux): fewer, larger reads and writes.

    Best effort: not a pipe, another system, or over the user's pipe limit, nothing changes.
    """
    with contextlib.suppress(OSError, ImportError, AttributeError, ValueError):
        import fcntl

        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
