"""Temporary files of writes in progress, named for their writer so that orphans are found.

A spool's name carries its writing process (``.w<pid>-<start>-…``, where
``<start>`` is the process's start time on Linux, so that a reused pid is not
taken for the writer). A spool whose writer is gone (killed in the middle of a
write) is an orphan: it is removed the next time a store is opened for writing
and by ``gc``, whatever its age. A spool whose name carries no writer (an older
toolcap) is left to the age rule.

A store whose bytes live elsewhere (an object store) spools on this machine, in
``<temp dir>/toolcap-<uid>/`` (0700, refused when it is not a private
directory of this user), under the same names, so its orphans are found the
same way: when a process first spools there, and by the store's ``gc``.

A spool counts toward no store limit: it is bounded instead. A streaming
write keeps at most ``max_artifact_size`` bytes in its spools (the head, and a
ring of the tail), plus one chunk; a one-shot put spools what it was given.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
import tempfile
import threading
from typing import IO

from toolcap.core._errors import StoreError

__all__ = ["clean_spools", "new_local_spool", "orphaned", "remove_orphans", "spool_prefix",
           "stale_spools"]

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


def stale_spools(directory: str, older_than: float) -> list[str]:
    """The spools in ``directory`` whose writer is gone or that are older than ``older_than``.

    Only regular files: whatever else is there is not ours to remove.
    """
    stale = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and (
                    orphaned(entry.name) or entry.stat(follow_symlinks=False).st_mtime < older_than
                ):
                    stale.append(entry.path)
    return stale


_checked: set[str] = set()
_checking = threading.Lock()


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def _local_folder() -> str:
    return os.path.join(tempfile.gettempdir(), f"toolcap-{_uid()}")


def _local_dir() -> str:
    """``<temp dir>/toolcap-<uid>``, made private on first use; orphans removed then."""
    folder = _local_folder()
    with _checking:
        if folder in _checked and os.path.isdir(folder):
            return folder
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != _uid() or st.st_mode & 0o077:
            raise StoreError(f"refusing {folder} for spools: not a private directory of this user")
        remove_orphans(folder)
        _checked.add(folder)
    return folder


def new_local_spool() -> IO[bytes]:
    """A private temporary file named for this process, in this machine's spool directory."""
    return tempfile.NamedTemporaryFile(  # mkstemp: O_EXCL, mode 0600
        "w+b", dir=_local_dir(), prefix=spool_prefix(), suffix=".tmp", delete=False)


def clean_spools(older_than: float, dry_run: bool) -> int:
    """Remove this machine's stale spools (see :func:`stale_spools`); how many."""
    stale = stale_spools(_local_folder(), older_than)
    if dry_run:
        return len(stale)
    removed = 0
    for path in stale:
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed += 1
    return removed
