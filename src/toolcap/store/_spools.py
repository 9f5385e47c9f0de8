"""Temporary files of writes in progress, named for their writer so that orphans are found.

A spool's name carries its writing process (``.w<pid>-<start>-…``, where
``<start>`` is the process's start time on Linux, so that a reused pid is not
taken for the writer). A spool whose writer is gone (killed in the middle of a
write) is an orphan: it is removed the next time a store is opened for writing
and by ``gc``, whatever its age. A spool whose name carries no writer (an older
toolcap) is left to the age rule.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re

__all__ = ["orphaned", "remove_orphans", "spool_prefix"]

_NAME = re.compile(r"\.w(\d{1,10})-(\d{1,20})-")


def _start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read(4096)
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields follow the last ")".
    fields = stat.rpartition(b")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@functools.cache
def _prefix(pid: int) -> str:
    return f".w{pid}-{_start_time(pid) or 0}-"


def spool_prefix() -> str:
    """The name prefix of this process's spools."""
    return _prefix(os.getpid())  # per pid: a forked child names its own spools


def orphaned(name: str) -> bool:
    """Whether the spool ``name`` was written by a process that is gone."""
    match = _NAME.match(name)
    if match is None:
        return False
    pid, start = int(match.group(1)), int(match.group(2))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        pass  # alive (someone else's), or not a pid at all
    if start:
        now = _start_time(pid)
        return now is not None and now != start
    return False


def remove_orphans(directory: str) -> int:
    """Remove the orphaned spools in ``directory``; how many. Never raises."""
    removed = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and orphaned(entry.name):
                    os.unlink(entry.path)
                    removed += 1
    return removed
