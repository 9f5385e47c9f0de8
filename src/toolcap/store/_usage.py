"""The local store's total size, kept in a journal that every process writing it shares.

A put checks the store's total against ``max_total_size``; summing every file's
size made a put cost grow with the store. Instead each process that makes an
artifact visible (wins the hard link) appends ``+<bytes>`` to ``.usage/journal``,
and the one whose unlink removes it appends ``-<bytes>``: exactly one line per
change, whoever races, so the sum is exact. A process reads only the lines
appended since it last looked, so a put costs the same with 10 or 100,000
artifacts.

Why a journal rather than one counter file rewritten in place: appends with
``O_APPEND`` need no read-modify-write under an exclusive lock, so writers never
wait for each other. Why not per-artifact size files: summing them is the scan
this replaces.

The first line ``=<bytes>`` is a snapshot. Past :data:`COMPACT_AT` bytes the
journal is replaced by a one-line snapshot of its sum (atomically, by rename),
under an exclusive ``flock`` on ``.usage/lock``; appends hold the same
lock shared from before the link or unlink to after the line, so no change is
lost in a swap and none is counted twice by a recount. A journal without a
snapshot (a store from a version without one, or whose journal was removed) is
rebuilt from a full scan, once, under the exclusive lock. A change made by a
process killed between the link and its line, or by an older version, goes
uncounted until ``gc`` recounts.

Without ``fcntl`` (Windows) there is no journal and the total is summed as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["COMPACT_AT", "UsageJournal", "journal_available"]

#: Journal size past which it is folded into a one-line snapshot.
COMPACT_AT = 64 << 10
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def journal_available() -> bool:
    """Whether this platform has the ``flock`` the journal needs."""
    return fcntl is not None


class UsageJournal:
    """The total bytes stored under ``root``, kept up to date incrementally."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "journal"
        self._lock_path = folder / "lock"
        self._lock_fd: int | None = None
        self._fd: int | None = None  # the journal as last opened for reading
        self._offset = 0  # bytes of it already summed
        self._total = 0
        self._known = False  # a snapshot line was read: the sum is the store's total
        self._mutex = threading.RLock()

    def close(self) -> None:
        """Close the files this journal holds open."""
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._lock_fd = None

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        # flock excludes other processes; threads of this one share the lock's
        # file description, so they take turns on the mutex first.
        with self._mutex:
            if self._lock_fd is None:
                self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | _NOFOLLOW,
                                        0o600)
            assert fcntl is not None
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def changing(self) -> contextlib.AbstractContextManager[None]:
        """Hold around a change and its :meth:`record`: no snapshot is taken meanwhile."""
        return self._locked(exclusive=False)

    def record(self, delta: int) -> None:
        """Append a change of ``delta`` bytes; call inside :meth:`changing`."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o600)
        try:
            os.write(fd, b"%+d\n" % delta)  # one write of a few bytes: appended whole
        finally:
            os.close(fd)

    def total(self, recount: Callable[[], int]) -> int:
        """The store's total bytes; ``recount()`` sums a full scan when the journal cannot."""
        with self._locked(exclusive=False):
            self._catch_up()
            if self._known and self._offset <= COMPACT_AT:
                return self._total
        with self._locked(exclusive=True):  # rebuild, or fold the journal into a snapshot
            self._catch_up()
            if not self._known:
                self._total = recount()
            self._snapshot()
            return self._total

    def reset(self, recount: Callable[[], int]) -> int:
        """Replace the journal with a snapshot of a full scan (``gc``: undo any drift)."""
        with self._locked(exclusive=True):
            self._total = recount()
            self._snapshot()
            return self._total

    def _catch_up(self) -> None:
        try:
            size = os.stat(self.path).st_size
            if self._fd is None or os.fstat(self._fd).st_ino != os.stat(self.path).st_ino:
                self._reopen()
        except FileNotFoundError:
            self._forget()
            return
        if size <= self._offset:
            return
        assert self._fd is not None
        data = os.pread(self._fd, size - self._offset, self._offset)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
        for line in data[:end].split(b"\n")[:-1]:
            self._apply(line)
        self._offset += end

    def _apply(self, line: bytes) -> None:
        try:
            if line.startswith(b"="):
                self._total, self._known = int(line[1:]), True
            else:
                self._total += int(line)
        except ValueError:
            self._known = False  # damaged: recount at the next look

    def _reopen(self) -> None:
        self._forget()
        self._fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW)

    def _forget(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._offset, self._total, self._known = None, 0, 0, False

    def _snapshot(self) -> None:
        """Write ``=total`` as the whole journal, by rename (hold the exclusive lock)."""
        temporary = self.path.with_name(f"journal.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o600)
        try:
            os.write(fd, b"=%d\n" % self._total)
        finally:
            os.close(fd)
        os.replace(temporary, self.path)
        self._reopen()
        self._catch_up()
