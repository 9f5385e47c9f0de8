"""Files rewritten in place: atomically, with a backup, and never over a concurrent write."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ._common import CommandError

__all__ = ["FileState", "atomic_write", "backup_path", "read_bytes", "rewrite_in_place",
           "same_file", "state_of"]


@dataclass(frozen=True)
class FileState:
    """What tells a file apart from itself rewritten: which file, how long, when written.

    A write that keeps all four (same size, within one tick of the file system's
    clock, in place) goes unnoticed; an append always changes the size.
    """

    device: int
    inode: int
    size: int
    modified_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileState:
        return cls(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def rewrite_in_place(path: Path, data: Iterable[bytes], read_as: FileState, *,
                     changed: bool, busy: str) -> str:
    """Replace ``path`` with ``data`` (atomically, keeping a backup); what to tell the user.

    ``read_as`` is the state the file was read in. If it was written since (a
    line appended by the agent still running, say), nothing is replaced and the
    backup made for it is removed: the new line would otherwise be lost. The
    error then says "PATH ``busy``" (exit status 1).
    """
    if not changed:
        return f"{path} unchanged"
    _refuse_if_changed(path, read_as, busy)
    backup = backup_path(path)
    try:
        os.link(path, backup)  # the original file itself becomes the backup: no copy
    except OSError:
        try:
            shutil.copy2(path, backup)
        except OSError as error:
            raise CommandError(f"cannot keep a backup in {backup}: {error.strerror}") from None
    try:
        atomic_write(path, data, like=path,
                     unless=lambda: _refuse_if_changed(path, read_as, busy))
    except CommandError:
        if same_file(path, backup):  # still a second name of the original: not needed
            with contextlib.suppress(OSError):
                backup.unlink()
        raise
    return f"updated {path} (backup: {backup})"


def _refuse_if_changed(path: Path, read_as: FileState, busy: str) -> None:
    if state_of(path) != read_as:
        raise CommandError(f"{path} {busy}", status=1)


def backup_path(path: Path) -> Path:
    """``FILE.bak``, or the first of ``FILE.bak.1``, ``FILE.bak.2``, … that does not exist.

    An existing backup is never overwritten: it may be the only true original.
    """
    candidate = path.with_name(path.name + ".bak")
    number = 0
    while candidate.exists() or candidate.is_symlink():
        number += 1
        candidate = path.with_name(f"{path.name}.bak.{number}")
    return candidate


def atomic_write(target: Path, data: Iterable[bytes], *, like: Path,
                  unless: Callable[[], None] | None = None) -> None:
    """Write ``target`` through a temporary file and a rename.

    ``unless`` runs right before the rename; if it raises, nothing is replaced.
    """
    directory = target.parent
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.",
                                             suffix=".tmp")
    except OSError as error:
        raise CommandError(f"cannot write in {directory}: {error.strerror}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            for piece in data:
                stream.write(piece)
            stream.flush()
            os.fsync(stream.fileno())
        with contextlib.suppress(OSError):
            shutil.copymode(like, temporary)
        if unless is not None:
            unless()
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise CommandError(f"cannot write {target}: {error.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def state_of(path: Path) -> FileState:
    try:
        return FileState.of(path.stat())
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False
