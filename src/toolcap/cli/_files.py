"""Files rewritten in place: atomically, with a backup, and never over a concurrent write."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ..sessions._records import detect_lines
from ._common import CommandError

__all__ = ["FileState", "Session", "add_rewrite_options", "atomic_write", "backup_path",
           "open_session", "read_bytes", "rewrite_in_place", "same_file", "state_of"]


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
    error then says "PATH ``busy``" (exit status 1). A write that fails (exit
    status 2) leaves the file as it was, and no backup of it.
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
            with contextlib.suppress(OSError):  # what the copy wrote before it failed
                backup.unlink()
            raise CommandError(f"cannot keep a backup in {backup}: {error.strerror}") from None
    try:
        atomic_write(path, data, like=path,
                     unless=lambda: _refuse_if_changed(path, read_as, busy))
    except CommandError:
        # Nothing was replaced: a backup that is still a second name of the file, or a
        # copy of it unchanged since it was read, is not needed (one of a file changed
        # meanwhile may be the only copy of what was read: it stays).
        if same_file(path, backup) or _unchanged(path, read_as):
            with contextlib.suppress(OSError):
                backup.unlink()
        raise
    return f"updated {path} (backup: {backup})"


def _unchanged(path: Path, read_as: FileState) -> bool:
    try:
        return state_of(path) == read_as
    except CommandError:
        return False


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


class Session(NamedTuple):
    """A session file opened for reading: the stream, its path, whether it is JSON Lines,
    and its state when opened (to refuse replacing it if it changes meanwhile)."""

    stream: BinaryIO
    path: Path
    lines: bool
    read_as: FileState


@contextlib.contextmanager
def open_session(args: argparse.Namespace, *, writing: bool) -> Iterator[Session]:
    """The file named by ``args`` (``session``/``conversation``, ``-o``, ``--in-place``,
    ``--lines``), checked before anything is read or stored."""
    path = Path(getattr(args, "session", None) or args.conversation)
    if args.output and same_file(path, Path(args.output)):
        raise CommandError("-o names the input file: use --in-place (it keeps a backup)")
    if args.output and writing:
        # Fail before anything is stored, not after.
        folder = Path(args.output).parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise CommandError(f"cannot write in {folder}: not a writable directory")
    if args.in_place:
        path = path.resolve()  # through a symbolic link: rewrite the file it names
    # Taken before the read: a write from now on shows in the state compared before
    # the file is replaced.
    read_as = state_of(path)
    try:
        stream = path.open("rb")
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None
    with stream:
        lines = args.lines
        if lines is None:
            lines = path.suffix.lower() in (".jsonl", ".ndjson") or detect_lines(stream)
        yield Session(stream, path, lines, read_as)


def add_rewrite_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``-o``, ``--in-place``, ``--dry-run`` and ``--lines`` of a command that rewrites a
    session file (``what`` names the result: "repaired", "compacted")."""
    target = parser.add_mutually_exclusive_group()
    target.add_argument("-o", "--output", metavar="OUT", help=f"write the {what} file here")
    target.add_argument("--in-place", action="store_true",
                        help="replace the file (atomically), keeping a backup in FILE.bak "
                        "(or .bak.1, .bak.2, ... if taken)")
    parser.add_argument("--dry-run", action="store_true",
                        help="report what would change; write nothing, store nothing")
    parser.add_argument("--lines", action=argparse.BooleanOptionalAction, default=None,
                        help="read as JSON Lines (default: by extension .jsonl/.ndjson, "
                        "else by content)")
