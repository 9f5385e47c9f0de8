"""What a store backend implements: a handful of primitives on artifact ids.

:class:`StoreBackend` is the contract between :class:`~toolcap.store.ArtifactStore`
(hashing, the largest-artifact cut, reads by bytes and lines, search, eviction,
verification) and the place the bytes live. Every primitive takes an artifact
id (the 32 hex digits of a reference, already validated) and may raise
``OSError`` or the backend's own exceptions: callers wrap them in
:class:`toolcap.StoreError` with :func:`store_errors`. A missing artifact is
``FileNotFoundError``. :class:`~toolcap.store.MemoryStore` is the short example.

Required: :attr:`location`, :meth:`publish`, :meth:`exists`, :meth:`scan`,
:meth:`load_info`, :meth:`read_range`, :meth:`object_size`, :meth:`touch`,
:meth:`remove`. The rest have working defaults.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import IO, TYPE_CHECKING

from toolcap.core._errors import StoreError
from toolcap.core._refs import PREFIX
from toolcap.core._store_limits import StoreLimits
from toolcap.store._records import ArtifactInfo, ArtifactNotFoundError

if TYPE_CHECKING:
    from toolcap.store._direct import SpoolWrite

__all__ = ["Clock", "StoreBackend", "store_errors"]

#: Seconds since the epoch; a store takes one so that tests can move time.
Clock = Callable[[], float]


def store_errors(location: str, *, ident: str | None = None) -> _StoreErrors:
    """A context that turns what a backend raises into one-line :class:`StoreError`\\ s.

    Messages name ``location`` and never carry content: an ``OSError`` gives only
    its ``strerror`` (its filename may hold a reference). With ``ident``, a
    missing file means that artifact is gone (:class:`ArtifactNotFoundError`).
    """
    return _StoreErrors(location, ident)


class _StoreErrors:
    # A class rather than @contextmanager: it wraps every chunk of every read.
    __slots__ = ("ident", "location")

    def __init__(self, location: str, ident: str | None) -> None:
        self.location = location
        self.ident = ident

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None or isinstance(exc, StoreError) or not isinstance(exc, Exception):
            return  # nothing raised, already ours, or not an error (KeyboardInterrupt)
        where = f"artifact store {self.location}"
        if isinstance(exc, FileNotFoundError):
            if self.ident is None:
                raise StoreError(f"{where}: not found") from None
            raise ArtifactNotFoundError(f"artifact {PREFIX}{self.ident} is gone") from None
        if isinstance(exc, OSError):
            raise StoreError(f"{where}: {exc.strerror or exc}") from exc
        # Backends (s3fs, botocore) raise their own types.
        raise StoreError(f"{where}: {type(exc).__name__}: {exc}") from exc


class StoreBackend(ABC):
    """The primitives a store backend provides, plus its limits and clock."""

    #: Minimum seconds between two recordings of a read of the same artifact.
    touch_interval: float = 0.0

    def __init__(self, *, limits: StoreLimits | None = None, clock: Clock | None = None) -> None:
        self.limits = StoreLimits() if limits is None else limits
        self.clock: Clock = clock or time.time

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store lives (a directory path or a URL), for messages."""

    # ----------------------------------------------------------------- required
    @abstractmethod
    def publish(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        """Make the spool's bytes and ``info`` visible as ``ident``, atomically.

        A reader must never see the bytes without their record, nor part of the
        bytes. It need not replace an artifact that is already there.
        """

    @abstractmethod
    def exists(self, ident: str) -> bool:
        """Whether artifact ``ident`` is committed; raise StoreError if it is unsafe."""

    @abstractmethod
    def scan(self) -> list[tuple[str, int, float]]:
        """Every committed artifact as (id, stored bytes, last use): eviction sorts it."""

    @abstractmethod
    def load_info(self, ident: str) -> ArtifactInfo:
        """The metadata record of a committed artifact."""

    @abstractmethod
    def read_range(self, ident: str, start: int, end: int) -> bytes:
        """Stored bytes ``[start, end)``, clipped at the end of the object."""

    @abstractmethod
    def object_size(self, ident: str) -> int:
        """How many bytes are stored under ``ident`` now (checked against its record)."""

    @abstractmethod
    def touch(self, ident: str, when: float) -> None:
        """Record that ``ident`` was read or written at ``when``."""

    @abstractmethod
    def remove(self, ident: str) -> None:
        """Delete an artifact: its bytes first (the commit point), then its record."""

    # ----------------------------------------------------------------- optional
    def new_spool(self) -> IO[bytes]:
        """A fresh, empty, private, seekable read/write binary file for one write."""
        return tempfile.NamedTemporaryFile("w+b", prefix="toolcap-", suffix=".tmp", delete=False)

    def settle(self, spool: IO[bytes]) -> None:
        """The spool's bytes so far are final (a long stream's head): a backend may
        start making them durable while the rest is written. Nothing by default."""
        return None

    def drop_spool(self, spool: IO[bytes]) -> None:
        """Close and remove a spool (never raises)."""
        with contextlib.suppress(OSError):  # closing flushes, which can fail (disk full)
            spool.close()
        name = getattr(spool, "name", None)
        if isinstance(name, str):
            with contextlib.suppress(OSError):
                os.unlink(name)

    def write_early(self, data: bytes) -> SpoolWrite | None:
        """Start writing a whole put's ``data`` to a spool while it is hashed (a
        backend that writes locally may, for big data), or ``None``: not early."""
        return None

    def write_spool(self, spool: IO[bytes], data: bytes) -> None:
        """Write a whole put's ``data`` into a new spool (a backend may write big data
        its own way: the local store past the page cache)."""
        spool.write(data)

    def publish_bytes(self, ident: str, data: bytes, make_info: Callable[[], ArtifactInfo]) -> None:
        """Store ``data`` (a whole put); ``make_info()`` may block briefly, so call it late."""
        spool = self.new_spool()
        try:
            self.write_spool(spool, data)
            self.publish(ident, spool, make_info())
        finally:
            self.drop_spool(spool)

    def match_prefix(self, prefix: str) -> list[str]:
        """The committed ids that start with ``prefix`` (16 to 31 hex digits)."""
        return [ident for ident, _, _ in self.scan() if ident.startswith(prefix)]

    def clean_temporaries(self, older_than: float, dry_run: bool) -> int:
        """Remove spools and orphan records last changed before ``older_than``; how many."""
        return 0

    def stored_total(self) -> int | None:
        """The total stored bytes if the backend keeps it (cheaply); ``None``: sum a scan."""
        return None

    def recount_total(self) -> None:
        """Set a kept total (and order) from a full scan (``gc`` calls it to undo any drift)."""
        return None  # nothing kept, nothing to set

    def eviction_order(self) -> Iterator[tuple[float, str, int]] | None:
        """(last use, id, stored bytes), least recently used first, if the backend keeps it.

        It must be the order of :meth:`scan` sorted by (last use, id), produced
        lazily without a scan; ``None``: sort a scan. Only used together with
        :meth:`stored_total`.
        """
        return None

    def remove_unused(self, victims: list[tuple[str, float]], before: float) -> list[str]:
        """Remove each (id, last use seen) not used since ``before``; the ids removed.

        The last use is read again right before the removal, so that a read or
        a re-put since the scan wins. An object store does it for the whole
        batch with one listing and batched deletes.
        """
        removed = []
        for ident, _ in victims:
            if self._unused_since(ident, before):
                with contextlib.suppress(FileNotFoundError):  # another process was first
                    self.remove(ident)
                removed.append(ident)
        return removed

    def _unused_since(self, ident: str, before: float) -> bool:
        try:
            return self.load_info(ident).last_read <= before
        except (StoreError, OSError):
            pass
        try:  # gone already: nothing to evict; bytes without a readable record: evictable
            return self.exists(ident)
        except (StoreError, OSError):
            return False

    def list_infos(self) -> list[ArtifactInfo]:
        """Every committed artifact's record (any order); an object store reads a listing."""
        infos = [self.info_or_none(ident) for ident, _, _ in self.scan()]
        return [info for info in infos if info is not None]

    # ----------------------------------------------------------------- helpers
    def info_or_none(self, ident: str) -> ArtifactInfo | None:
        """The record of ``ident``, or ``None`` when it is gone or unreadable."""
        try:
            return self.load_info(ident)
        except (StoreError, OSError):
            return None
