"""The watchdog of a process group: ends the group when the toolcap process that started it dies.

Run as a script by :mod:`toolcap._children` (``python -I -S _watchdog.py``), with
stdin the read end of a pipe whose only writer is that toolcap process. It reads
lines: ``arm PGID`` (guard that group), ``disarm`` (toolcap ended it, or left it on
purpose). When the pipe ends while a group is armed, toolcap has died without
cleaning up (SIGKILL, a crash): the group gets SIGTERM, and SIGKILL once
``GRACE`` seconds have passed or it has stopped answering.

It imports nothing of toolcap (it runs without the site packages) and lives in a
session of its own, so that a signal to toolcap's terminal or group spares it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

#: Seconds between SIGTERM and SIGKILL, as for ``toolcap run --timeout``.
GRACE = 2.0
_POLL = 0.02


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a member."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_group(pgid: int, grace: float = GRACE) -> None:
    """SIGTERM the group, then SIGKILL whatever is left of it after ``grace`` seconds."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(_POLL)  # nothing to wait on for processes that are not our children
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def main() -> None:
    """Guard what toolcap arms until its pipe ends."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    armed = 0
    for raw in sys.stdin.buffer:
        word, _, value = raw.decode("ascii", "replace").strip().partition(" ")
        if word == "arm" and value.isdigit():
            armed = int(value)
        elif word == "disarm":
            armed = 0
    if armed > 1:
        end_group(armed)


if __name__ == "__main__":
    main()
