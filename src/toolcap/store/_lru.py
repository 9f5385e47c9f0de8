"""The local store's eviction order, kept on disk so that an eviction never scans the store.

Eviction removes the least recently used artifacts first (the data file's
modification time is its last use). Sorting a scan of every artifact made a put
that evicts cost grow with the store. Instead each last use is also noted as an
empty file named for the artifact in a directory named for the second of that
use::

    <root>/.lru/<t >> 16>/<(t >> 8) & 255>/<t & 255>/<artifact id>     (t: whole seconds, hex)

so the oldest uses are found by listing the first directory of each level (at
most 256 entries each, whatever the store holds), and only the oldest second's
artifacts are looked at. A put notes the new artifact before it links it; a read
notes the new second before it moves the file's time and then drops the old
note; a removal drops the note. Every step is a create or an unlink of a file
of its own, so writers in several processes never wait for each other, and a
note left over (a process killed between two steps, two readers racing) is only
a hint: before an artifact is offered for eviction its file's time is read, and
a note that does not match it is dropped (the matching note is in a later
directory). The order offered is exactly the slow path's: by last use, then by id.

An index is trusted once ``.lru/complete`` exists. A store written by a version
without the index gets it from one full scan, the first time it must evict; an
artifact linked by such a version later (or by a process killed between its
link and its note) is not offered until ``gc`` rebuilds the index from its scan.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

__all__ = ["UseIndex"]

_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_COMPLETE = "complete"
_LEVELS = 3
#: (mtime, id, bytes) of an artifact's file, or None when it is gone.
Probe = Callable[[str], "tuple[float, int] | None"]


def _second(when: float) -> int:
    return max(0, int(when))


def _parts(second: int) -> tuple[str, str, str]:
    return f"{second >> 16:x}", f"{(second >> 8) & 255:x}", f"{second & 255:x}"


def _hex_dirs(folder: Path) -> list[tuple[int, str]]:
    """The subdirectories of ``folder`` named in hex, in numeric order."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for entry in entries:
        try:
            number = int(entry.name, 16)
        except ValueError:
            continue
        if entry.is_dir(follow_symlinks=False):
            found.append((number, entry.name))
    found.sort()
    return found


class UseIndex:
    """The artifacts of a local store by last use, under ``folder`` (``<root>/.lru``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._draining: tuple[int, list[tuple[float, str]]] | None = None

    def _path(self, ident: str, when: float) -> Path:
        return self.folder.joinpath(*_parts(_second(when)), ident)

    def note(self, ident: str, when: float) -> None:
        """Record a use of ``ident`` at ``when`` (before the file's time is set to it)."""
        path = self._path(ident, when)
        for attempt in range(3):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o600))
                return
            except FileNotFoundError:
                if attempt == 2:
                    raise
                # mode 0700 like the store's own directories (mkdir's mode meets the umask)
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    def drop(self, ident: str, when: float) -> None:
        """Forget the use of ``ident`` at ``when`` (after its file moved on or was removed)."""
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.unlink(self._path(ident, when))

    def moved(self, ident: str, before: float, after: float) -> None:
        """Drop the note of ``before`` unless ``after`` falls in the same second."""
        if _second(before) != _second(after):
            self.drop(ident, before)

    @property
    def complete(self) -> bool:
        """Whether every artifact has its note (the index was built from a scan)."""
        return (self.folder / _COMPLETE).exists()

    def rebuild(self, entries: Iterable[tuple[str, int, float]]) -> None:
        """Note every scanned (id, bytes, mtime); then the index is complete.

        Notes that match no scanned artifact are left: they are dropped when
        the oldest are looked at.
        """
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for ident, _, mtime in entries:
            self.note(ident, mtime)
        os.close(os.open(self.folder / _COMPLETE, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o600))

    def oldest(self, probe: Probe, settled: float) -> Iterator[tuple[float, str, int]]:
        """(last use, id, bytes) of every artifact, least recently used first.

        ``probe(id)`` gives the artifact's current (mtime, bytes), or None when
        it is gone; a note that does not match it is dropped on the way. It is
        consumed lazily: an eviction that frees enough after three artifacts
        lists three directories and one second's notes, not the store. The
        sorted notes of the second being drained are kept for the next call,
        so that a second holding many artifacts is listed once per process,
        if it is before ``settled`` (no writer notes a use that long ago; the
        grace hour); each is probed again right before it is offered.
        """
        offered: set[str] = set()  # two notes can match one use: offer it once
        for second, folder in self._seconds():
            if self._draining is not None and self._draining[0] == second:
                pending = self._draining[1]
            else:
                pending = self._second_of(folder, probe)
                self._draining = (second, pending) if second + 1 < settled else None
            while pending:
                ident = pending[-1][1]
                seen = probe(ident)
                if seen is None or _second(seen[0]) > second or ident in offered:
                    if pending and pending[-1][1] == ident:
                        pending.pop()  # gone, or used later (noted there): this note is stale
                    with contextlib.suppress(OSError):
                        os.unlink(folder / ident)
                    if seen is None:
                        # Not linked yet when probed: a put links the file after
                        # its note, so look again and note it back if it is there.
                        again = probe(ident)
                        if again is not None and _second(again[0]) == second:
                            self.note(ident, again[0])
                    continue
                yield seen[0], ident, seen[1]
                # Only now: a consumer that stopped at it did not take it. (Checked:
                # another thread's eviction may have taken it from the shared list.)
                if pending and pending[-1][1] == ident:
                    pending.pop()
                offered.add(ident)
            self._draining = None
            self._prune(folder)

    def _seconds(self) -> Iterator[tuple[int, Path]]:
        """Every second that has a directory of notes, oldest first; empty levels removed."""
        for high, high_name in _hex_dirs(self.folder):
            for mid, mid_name in _hex_dirs(self.folder / high_name):
                for low, low_name in _hex_dirs(self.folder / high_name / mid_name):
                    yield (high << 16) | (mid << 8) | low, self.folder.joinpath(
                        high_name, mid_name, low_name)
                self._prune(self.folder / high_name / mid_name)
            self._prune(self.folder / high_name)

    @staticmethod
    def _second_of(folder: Path, probe: Probe) -> list[tuple[float, str]]:
        """The notes in ``folder`` as (last use, id), the oldest last (taken from the end)."""
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for ident in names:
            seen = probe(ident)
            found.append((-1.0 if seen is None else seen[0], ident))  # gone: dropped first
        found.sort(reverse=True)
        return found

    @staticmethod
    def _prune(folder: Path) -> None:
        # Only an empty directory goes; one filled meanwhile stays (ENOTEMPTY).
        with contextlib.suppress(OSError):
            os.rmdir(folder)
