"""The local-directory artifact store, the embedded default.

Layout under the root (directories 0700, files 0600, since tool output holds
secrets)::

    <root>/ab/ab12…(32 hex)        the stored bytes: a plain file any tool can open
    <root>/ab/ab12….json           its metadata record (never any content)
    <root>/.tmp/.w<pid>-<start>-xyz.tmp   writes in progress, named for their writer
    <root>/.usage/journal, lock    the total size, kept incrementally (store/_usage.py)
    <root>/.lru/…/<id>             the eviction order, kept incrementally (store/_lru.py)

A write goes to ``.tmp`` (same file system), is flushed to disk, then
hard-linked into place: the link is atomic and fails if the name exists, so the
first writer of a content wins, a second one writes nothing visible, and a
writer killed at any point leaves no partial artifact under a real name. The
record is linked before the bytes, so a visible artifact always has one. The
data file's modification time is the artifact's last use. What a killed writer
left in ``.tmp`` is removed the next time the store is written to, and by ``gc``
(:mod:`toolcap.store._spools`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from toolcap.core._errors import StoreError
from toolcap.core._refs import ARTIFACT_ID
from toolcap.core._store_limits import StoreLimits
from toolcap.store._backend import Clock
from toolcap.store._base import ArtifactStore
from toolcap.store._direct import DIRECT_MIN, SpoolWrite, write_whole
from toolcap.store._flush import BackgroundFlush, flush_early
from toolcap.store._limits import GRACE_SECONDS
from toolcap.store._lru import UseIndex
from toolcap.store._records import ArtifactInfo
from toolcap.store._spools import remove_orphans, spool_prefix, stale_spools
from toolcap.store._usage import UsageJournal, journal_available

__all__ = ["LocalStore", "default_root"]

log = logging.getLogger("toolcap.store")

_ID = ARTIFACT_ID
_FANOUT = re.compile(r"[0-9a-f]{2}")
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# The data of a new file is all that must reach the disk: fdatasync, where there is one.
_datasync = getattr(os, "fdatasync", os.fsync)


def default_root() -> Path:
    """``<user cache dir>/toolcap/artifacts`` as the platform defines the cache dir."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("toolcap", appauthor=False)) / "artifacts"


class LocalStore(ArtifactStore):
    """Artifacts as plain files in a directory (default: :func:`default_root`).

    ``fsync`` (default on) flushes each artifact to the disk before it becomes
    visible, so that not even a power loss can expose a torn file under a
    content hash. :meth:`flush_in_background` moves that flush off the writer's
    wait, to a thread that flushes each new artifact shortly after it is linked.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        fsync: bool = True,
        limits: StoreLimits | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(limits=limits, clock=clock)
        path = default_root() if root is None else Path(os.fsdecode(root)).expanduser()
        self.root = path.absolute()
        self.fsync = fsync
        self._background: BackgroundFlush | None = None
        self._ready: set[Path] = set()  # directories known to exist and be ours
        self._usage = UsageJournal(self.root / ".usage") if journal_available() else None
        self._uses = UseIndex(self.root / ".lru")

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    def flush_in_background(self) -> None:
        """Link each artifact as soon as it is written, and flush it to the disk on a
        thread within about 50 ms (:data:`toolcap.store._flush.FLUSH_DELAY`).

        An artifact is then complete and readable by any process on the machine
        when ``put`` returns; a power loss or a kernel crash before its flush can
        lose it (it then reads shorter than its record, and the next put of the
        same content writes it again); :meth:`wait_flushed` waits for the flushes.
        """
        if self.fsync and self._background is None:
            self._background = BackgroundFlush()
            self.fsync = False

    def wait_flushed(self, timeout: float) -> bool:
        """Wait until every artifact written so far is on the disk; False on timeout."""
        return self._background is None or self._background.wait(timeout)

    @property
    def location(self) -> str:
        """The store directory."""
        return str(self.root)

    def path_of(self, ref: str) -> Path:
        """The plain file holding an artifact's bytes (resolves a prefix)."""
        return self._data(self._ident(ref))

    # ------------------------------------------------------------ directories
    def _mkdir(self, path: Path, *, remember: bool = True) -> None:
        if path in self._ready:
            return
        try:
            path.mkdir(mode=0o700, parents=path == self.root)
        except FileExistsError:
            self._check_dir(path)
        else:
            os.chmod(path, 0o700)  # mkdir's mode is filtered through the umask
        if remember:
            self._ready.add(path)

    def _check_dir(self, path: Path) -> None:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise StoreError(f"refusing {path}: not a plain directory (a symlink?)")

    def _tmpdir(self) -> Path:
        tmp = self.root / ".tmp"
        if tmp in self._ready:
            return tmp
        if not self.root.is_dir():
            self._mkdir(self.root)
        self._mkdir(tmp)
        remove_orphans(str(tmp))  # once per store: what killed writers left behind
        return tmp

    def _data(self, ident: str, *, create: bool = False) -> Path:
        if not _ID.fullmatch(ident):  # defence in depth: only parse_ref output gets here
            raise StoreError("refusing a malformed artifact id")
        fan = self.root / ident[:2]
        if create:  # checked every time: this is the directory a link goes through
            self._mkdir(fan, remember=False)
        return fan / ident

    def _checked(self, ident: str) -> Path:
        """The data path, refusing a planted symlink or anything but a regular file."""
        path = self._data(ident)
        self._check_dir(path.parent)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"refusing {path}: not a regular file (a symlink?)")
        return path

    # ---------------------------------------------------------------- backend
    # The primitives of toolcap.store.StoreBackend, documented there.
    def new_spool(self) -> IO[bytes]:
        try:
            return tempfile.NamedTemporaryFile(  # mkstemp: O_EXCL, mode 0600
                "w+b", dir=self._tmpdir(), prefix=spool_prefix(), suffix=".tmp", delete=False
            )
        except FileNotFoundError:
            self._ready.clear()  # the directory was removed behind our back: make it again
            return tempfile.NamedTemporaryFile(
                "w+b", dir=self._tmpdir(), prefix=spool_prefix(), suffix=".tmp", delete=False
            )

    def write_spool(self, spool: IO[bytes], data: bytes) -> None:
        write_whole(spool, data)  # a big one past the page cache (store/_direct.py)

    def write_early(self, data: bytes) -> SpoolWrite | None:
        return SpoolWrite(self, data) if len(data) >= DIRECT_MIN else None

    def drop_spool(self, spool: IO[bytes]) -> None:
        with contextlib.suppress(OSError):  # closing flushes, which can fail (disk full)
            spool.close()
        with contextlib.suppress(OSError):
            os.unlink(spool.name)

    def _link(self, source: str, target: Path) -> bool:
        """Link ``source`` to ``target`` unless it exists; whether this call created it."""
        try:
            os.link(source, target, follow_symlinks=False)
            return True
        except FileExistsError:
            if not target.name.endswith(".json"):
                self._checked(target.name)  # an existing artifact, not a planted link
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
        # A file system without hard links: rename is still atomic, it only
        # cannot refuse to replace, and the replacement has the same content.
        if os.path.lexists(target):
            return False
        os.replace(source, target)
        return True

    def settle(self, spool: IO[bytes]) -> None:
        """Flush a long stream's final head to the disk on a thread while the stream
        goes on, so that the flush before publishing has only the tail left."""
        if self.fsync:
            flush_early(spool)

    def publish(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        spool.flush()
        if self.fsync:
            _datasync(spool.fileno())
        record = json.dumps(info.record(), separators=(",", ":")).encode()
        for attempt in range(3):
            try:
                self._publish_once(ident, spool, info, record)
                if self._background is not None:
                    data = self._data(ident)
                    self._background.add(str(data), str(data.with_name(ident + ".json")))
                return
            except FileNotFoundError:
                # The same content, found in place, was removed (a delete or an
                # eviction elsewhere) before it could count as used: link again.
                if attempt == 2:
                    raise

    def _publish_once(self, ident: str, spool: IO[bytes], info: ArtifactInfo,
                      record: bytes) -> None:
        data = self._data(ident, create=True)
        meta = self.new_spool()
        try:
            meta.write(record)
            meta.flush()
            if self.fsync:
                _datasync(meta.fileno())
            self._link(meta.name, data.with_name(ident + ".json"))
        finally:
            self.drop_spool(meta)
        # The file is linked with its time already set, so that no evictor sees
        # it with another time (and drops its note as stale) between link and utime.
        spool.flush()
        os.utime(spool.fileno(), (info.created, info.created))
        self._uses.note(ident, info.created)  # before the link: a visible artifact has its note
        with self._changing():
            linked = self._link(spool.name, data)
            if linked and self._usage is not None:
                self._usage.record(info.bytes)
        if not linked:
            self.touch(ident, info.created)
            return
        # Again after the link: an evictor that found the note before the file
        # existed may have dropped it (it notes it back if it sees the file after).
        self._uses.note(ident, info.created)

    def exists(self, ident: str) -> bool:
        try:
            self._checked(ident)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def match_prefix(self, prefix: str) -> list[str]:
        fan = self.root / prefix[:2]
        try:
            self._check_dir(fan)
            names = os.listdir(fan)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [n for n in names if _ID.fullmatch(n) and n.startswith(prefix)]

    def scan(self) -> list[tuple[str, int, float]]:
        found: list[tuple[str, int, float]] = []
        try:
            fans = [e for e in os.scandir(self.root) if _FANOUT.fullmatch(e.name)]
        except (FileNotFoundError, NotADirectoryError):
            return found
        for fan in fans:
            if not fan.is_dir(follow_symlinks=False):
                continue
            for entry in os.scandir(fan.path):
                if _ID.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    found.append((entry.name, st.st_size, st.st_mtime))
        return found

    def load_info(self, ident: str) -> ArtifactInfo:
        path = self._checked(ident)
        fd = os.open(path.with_name(ident + ".json"), os.O_RDONLY | _NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(1 << 16)
        try:
            record = json.loads(raw)
        except ValueError:
            raise StoreError(f"damaged metadata for {path}") from None
        info = ArtifactInfo.from_record(record, location=str(path))
        return dataclasses.replace(info, last_read=os.lstat(path).st_mtime)

    def read_range(self, ident: str, start: int, end: int) -> bytes:
        fd = os.open(self._checked(ident), os.O_RDONLY | _NOFOLLOW)
        try:
            return os.pread(fd, max(0, end - start), start)
        finally:
            os.close(fd)

    def object_size(self, ident: str) -> int:
        # Called right after load_info, which refused a planted link; the read refuses again.
        return os.lstat(self._data(ident)).st_size

    def touch(self, ident: str, when: float) -> None:
        path = self._checked(ident)
        before = os.lstat(path).st_mtime
        self._uses.note(ident, when)  # the new note first, so that the use is never unnoted
        os.utime(path, (when, when), follow_symlinks=False)
        self._uses.moved(ident, before, when)

    def remove(self, ident: str) -> None:
        path = self._checked(ident)
        with self._changing():
            st = os.lstat(path)
            os.unlink(path)  # only one remover gets past this: it alone records the change
            if self._usage is not None:
                self._usage.record(-st.st_size)
        self._uses.drop(ident, st.st_mtime)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.with_name(ident + ".json"))

    def _changing(self) -> contextlib.AbstractContextManager[None]:
        if self._usage is None:
            return contextlib.nullcontext()
        self._mkdir(self.root / ".usage")
        return self._usage.changing()

    def _scanned_total(self) -> int:
        return sum(size for _, size, _ in self.scan())

    def stored_total(self) -> int | None:
        if self._usage is None:
            return None
        self._mkdir(self.root / ".usage")
        return self._usage.total(self._scanned_total)

    def recount_total(self) -> None:
        if not self.root.is_dir():
            return
        if self._usage is not None:
            self._mkdir(self.root / ".usage")
            self._usage.reset(self._scanned_total)
        self._uses.rebuild(self.scan())  # also notes what an older version or a killed writer left

    def eviction_order(self) -> Iterator[tuple[float, str, int]] | None:
        if self._usage is None:
            return None  # no kept total either: the scan gives both
        if not self._uses.complete:
            self._uses.rebuild(self.scan())
        return self._uses.oldest(self._probe, settled=self.clock() - GRACE_SECONDS)

    def _probe(self, ident: str) -> tuple[float, int] | None:
        if not _ID.fullmatch(ident):
            return None
        try:
            st = os.lstat(self._data(ident))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return (st.st_mtime, st.st_size) if stat.S_ISREG(st.st_mode) else None

    def clean_temporaries(self, older_than: float, dry_run: bool) -> int:
        stale = stale_spools(str(self.root / ".tmp"), older_than)
        try:
            fans = [e for e in os.scandir(self.root) if _FANOUT.fullmatch(e.name)]
        except (FileNotFoundError, NotADirectoryError):
            fans = []
        for fan in fans:
            if not fan.is_dir(follow_symlinks=False):
                continue
            for entry in os.scandir(fan.path):
                name = entry.name
                if (
                    name.endswith(".json")
                    and _ID.fullmatch(name[:-5])
                    and not os.path.lexists(os.path.join(fan.path, name[:-5]))
                    and entry.stat(follow_symlinks=False).st_mtime < older_than
                ):
                    stale.append(entry.path)  # a record whose bytes never arrived
        if dry_run:
            return len(stale)
        removed = 0
        for path in stale:
            try:
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                pass  # another cleaner was first
            except OSError as exc:  # skip what cannot be removed; clean the rest
                log.warning("gc could not remove %s: %s", path, exc.strerror or exc)
        return removed
