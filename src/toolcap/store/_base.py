"""The artifact store: content-addressed, written once, bounded, readable by range.

:class:`ArtifactStore` holds everything that does not depend on where the bytes
live (hashing, the largest-artifact cut, reads by bytes and lines, search,
eviction); a backend supplies a dozen small primitives. It implements the
:class:`toolcap.protocols.ArtifactSink` protocol: ``put`` returns a reference or
raises :class:`toolcap.StoreError`, never a reference to something not stored.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import IO, TypeVar

from toolcap.core._errors import StoreError
from toolcap.core._refs import ID_LENGTH, PREFIX, format_ref, parse_ref
from toolcap.core._utf8 import sanitize
from toolcap.store._gc import evict
from toolcap.store._limits import GRACE_SECONDS, SNAP_WINDOW, Limits, snap_head, snap_tail
from toolcap.store._records import (
    ArtifactInfo,
    ArtifactNotFoundError,
    GcReport,
    GrepResult,
)
from toolcap.store._regex import compile_pattern
from toolcap.store._search import OVERLAP, line_segments, search, split_lines
from toolcap.store._writer import ArtifactWriter

__all__ = ["ArtifactStore", "Clock"]

log = logging.getLogger("toolcap.store")

Clock = Callable[[], float]
T = TypeVar("T")
CHUNK = 1 << 20  # read granularity for scans; bounds memory, not correctness
PARALLEL_MIN = 1 << 18  # below this a thread costs more than it saves


def _as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    if isinstance(data, str):
        # Lone surrogates cannot be encoded: store them as U+FFFD, as the cut shows them.
        return sanitize(data).encode("utf-8")
    return bytes(data)


def _newline_counter(raw: bytes) -> Callable[[], int]:
    """Start counting the line breaks of ``raw``; the returned callable waits for the count.

    A big count runs in a thread so that it overlaps the write of the same bytes
    (file writes release the GIL). Nothing is counted for content already stored.
    """
    if len(raw) < PARALLEL_MIN:
        count = raw.count(b"\n")
        return lambda: count
    result: list[int] = []

    def run() -> None:
        # In slices, so that the GIL changes hands between them and the writer
        # gets into its (GIL-free) system call while the count goes on.
        step = CHUNK
        result.append(sum(raw.count(b"\n", i, i + step) for i in range(0, len(raw), step)))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()

    def wait() -> int:
        worker.join()
        return result[0]

    return wait


class ArtifactStore(ABC):
    """Base class of the artifact stores (memory, local directory, fsspec URL).

    Limits: ``max_artifact_size`` (bytes; over it only the head and tail are
    kept and the record says ``partial``), ``max_total_size`` (bytes; when a
    write takes the store over it, the least recently read artifacts are
    evicted), ``max_age_days`` (applied by :meth:`gc`). ``None`` means
    unlimited; sizes may also be strings such as ``"256MB"``. Nothing read or
    written within the last hour is ever evicted. ``clock`` returns seconds
    since the epoch and exists so that tests can move time.
    """

    #: Minimum seconds between two recordings of a read of the same artifact.
    touch_interval: float = 0.0

    def __init__(
        self,
        *,
        max_artifact_size: int | str | None = Limits.DEFAULT_ARTIFACT,
        max_total_size: int | str | None = Limits.DEFAULT_TOTAL,
        max_age_days: float | None = Limits.DEFAULT_AGE_DAYS,
        clock: Clock | None = None,
    ) -> None:
        self.limits = Limits.build(max_artifact_size, max_total_size, max_age_days)
        self.clock: Clock = clock or time.time

    # ------------------------------------------------------------------ backend
    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store lives (a directory path or a URL), for messages."""

    @abstractmethod
    def _new_spool(self) -> IO[bytes]:
        """A fresh, empty, private, seekable read/write binary file for one write."""

    @abstractmethod
    def _drop_spool(self, spool: IO[bytes]) -> None:
        """Close and remove a spool (never raises)."""

    @abstractmethod
    def _publish(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        """Make the spool's bytes visible as ``ident``, atomically, without replacing."""

    @abstractmethod
    def _exists(self, ident: str) -> bool:
        """Whether artifact ``ident`` (32 hex) is committed; raise StoreError if unsafe."""

    @abstractmethod
    def _match(self, prefix: str) -> list[str]:
        """The committed ids that start with ``prefix`` (16 to 31 hex digits)."""

    @abstractmethod
    def _scan(self) -> list[tuple[str, int, float]]:
        """Every committed artifact as (id, stored bytes, modification time)."""

    @abstractmethod
    def _load_info(self, ident: str) -> ArtifactInfo:
        """The metadata record of a committed artifact."""

    @abstractmethod
    def _read(self, ident: str, start: int, end: int) -> bytes:
        """Stored bytes ``[start, end)``, clipped at the end of the object."""

    @abstractmethod
    def _touch(self, ident: str, when: float) -> None:
        """Record that ``ident`` was read or written at ``when``."""

    @abstractmethod
    def _remove(self, ident: str) -> None:
        """Delete an artifact: its bytes first (the commit point), then its record."""

    @abstractmethod
    def _clean_temporaries(self, older_than: float, dry_run: bool) -> int:
        """Remove spools and orphan records last changed before ``older_than``."""

    def _guarded_spool(self) -> IO[bytes]:
        try:
            return self._new_spool()
        except StoreError:
            raise
        except OSError as exc:
            raise StoreError(f"artifact store {self.location}: {exc.strerror or exc}") from exc

    def _publish_bytes(
        self, ident: str, data: bytes, make_info: Callable[[], ArtifactInfo]
    ) -> None:
        """Store ``data``; ``make_info()`` may block briefly, so call it as late as possible."""
        spool = self._new_spool()
        try:
            spool.write(data)
            self._publish(ident, spool, make_info())
        finally:
            self._drop_spool(spool)

    # ------------------------------------------------------------------ writing
    def put(self, data: bytes | bytearray | memoryview | str, *, tool: str | None = None) -> str:
        """Store ``data`` once and return its reference ``toolcap:<32 hex>``.

        ``str`` is stored as its UTF-8 encoding. If the same bytes are already
        stored, nothing is written (the artifact only counts as just used).
        Raises :class:`StoreError` on any failure.
        """
        raw = _as_bytes(data)
        digest = hashlib.sha256(raw).hexdigest()  # first: a repeated put costs only this
        ident = digest[:ID_LENGTH]
        return self._guarded(lambda: self._put_new(ident, digest, raw, tool))

    def _put_new(
        self, ident: str, digest: str, raw: bytes, tool: str | None
    ) -> str:
        now = self.clock()
        if self._exists(ident):
            self._touch(ident, now)
            return format_ref(digest)
        limit = self.limits.max_artifact_size
        head: int | None = None
        stored = raw
        if limit is not None and len(raw) > limit:
            head_budget, tail_budget = self.limits.split()
            head = snap_head(raw, head_budget)
            tail = raw[len(raw) - tail_budget :]
            stored = raw[:head] + tail[snap_tail(tail[:SNAP_WINDOW]) :]
        newlines = _newline_counter(raw)

        def make_info() -> ArtifactInfo:
            return ArtifactInfo(
                ref=format_ref(digest),
                sha256=digest,
                bytes=len(stored),
                original_bytes=len(raw),
                lines=newlines() + (1 if raw and not raw.endswith(b"\n") else 0),
                created=now,
                last_read=now,
                tool=tool,
                partial=head is not None,
                head_bytes=head,
            )

        self._publish_bytes(ident, stored, make_info)
        self._after_write()
        return format_ref(digest)

    def open_writer(self, *, tool: str | None = None) -> ArtifactWriter:
        """A writer for content that arrives in chunks (a stream of any size).

        It hashes as it goes and keeps at most ``max_artifact_size`` bytes on
        disk; ``commit()`` returns the same reference ``put`` gives for the
        concatenated chunks, ``abort()`` leaves nothing behind.
        """
        return ArtifactWriter(self, tool=tool)

    def _commit_spool(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        """Called by the writer: publish unless the same content is already there."""

        def run() -> str:
            if self._exists(ident):
                self._touch(ident, info.created)
            else:
                self._publish(ident, spool, info)
                self._after_write()
            return info.ref

        self._guarded(run)

    def _guarded(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except StoreError:
            raise
        except OSError as exc:
            # strerror only: the filename may carry a reference, never content.
            raise StoreError(f"artifact store {self.location}: {exc.strerror or exc}") from exc
        except Exception as exc:  # backends (s3fs, botocore) raise their own types
            raise StoreError(
                f"artifact store {self.location}: {type(exc).__name__}: {exc}"
            ) from exc

    def _after_write(self) -> None:
        if self.limits.max_total_size is None:
            return
        try:
            entries = self._scan()
            if sum(size for _, size, _ in entries) > self.limits.max_total_size:
                evict(self, GcReport(dry_run=False), entries, by_age=False)
        except Exception as exc:  # the artifact is stored; eviction is best effort
            log.debug("artifact eviction after write failed: %s", type(exc).__name__)

    # ------------------------------------------------------------------ lookup
    def _ident(self, ref: str) -> str:
        hexpart = parse_ref(ref)
        ident = hexpart[:ID_LENGTH]

        def find() -> list[str]:
            if len(hexpart) >= ID_LENGTH:
                return [ident] if self._exists(ident) else []
            return sorted(self._match(hexpart))

        try:
            found = find()
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"artifact store {self.location}: {type(exc).__name__}") from exc
        if len(found) > 1:
            raise ArtifactNotFoundError(
                f"ambiguous reference {PREFIX}{hexpart}: {len(found)} artifacts match"
            )
        if not found or (
            len(hexpart) > ID_LENGTH and not self.stat(PREFIX + ident).sha256.startswith(hexpart)
        ):
            raise ArtifactNotFoundError(f"no artifact {PREFIX}{hexpart} in {self.location}")
        return found[0]

    def resolve(self, ref: str) -> str:
        """The full reference ``toolcap:<32 hex>`` that ``ref`` (a prefix) names.

        Raises :class:`InvalidReferenceError` for a malformed reference and
        :class:`ArtifactNotFoundError` when it names no artifact or several.
        """
        return PREFIX + self._ident(ref)

    def stat(self, ref: str) -> ArtifactInfo:
        """The metadata record of an artifact (no content)."""
        ident = self._ident(ref)
        try:
            return self._load_info(ident)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"artifact store {self.location}: {type(exc).__name__}") from exc

    def list(self) -> builtins.list[ArtifactInfo]:
        """Every artifact's record, newest first."""
        entries = self._guarded(self._scan)
        infos = [self._info_or_none(ident, mtime) for ident, _, mtime in entries]
        found = [info for info in infos if info is not None]
        return sorted(found, key=lambda i: (-i.created, i.ref))

    def _info_or_none(self, ident: str, mtime: float) -> ArtifactInfo | None:
        try:
            return self._load_info(ident)
        except FileNotFoundError:
            return None  # deleted between the scan and now
        except (StoreError, OSError):
            return None

    def delete(self, ref: str) -> None:
        """Delete an artifact now (no grace period: the caller asked for it)."""
        ident = self._ident(ref)
        self._guarded(lambda: self._remove(ident))

    # ------------------------------------------------------------------ reading
    def iter_bytes(
        self, ref: str, offset: int = 0, length: int | None = None, *, chunk_size: int = CHUNK
    ) -> Iterator[bytes]:
        """The stored bytes ``[offset, offset+length)`` in chunks (all of them by default)."""
        if offset < 0 or (length is not None and length < 0):
            raise StoreError("offset and length must not be negative")
        ident = self._ident(ref)
        self._guarded(lambda: self._touch_read(ident))
        return self._chunks(ident, offset, None if length is None else offset + length, chunk_size)

    def _chunks(self, ident: str, start: int, end: int | None, size: int) -> Iterator[bytes]:
        pos = start
        while end is None or pos < end:
            want = size if end is None else min(size, end - pos)
            block = self._read_guarded(ident, pos, pos + want)
            if not block:
                return
            yield block
            pos += len(block)

    def _read_guarded(self, ident: str, start: int, end: int) -> bytes:
        try:
            return self._read(ident, start, end)
        except StoreError:
            raise
        except FileNotFoundError:
            raise ArtifactNotFoundError(f"artifact {PREFIX}{ident} is gone") from None
        except Exception as exc:
            raise StoreError(f"artifact store {self.location}: {type(exc).__name__}") from exc

    def _touch_read(self, ident: str) -> None:
        now = self.clock()
        if (
            self.touch_interval > 0
            and now - self._load_info(ident).last_read < self.touch_interval
        ):
            return
        self._touch(ident, now)

    def read_bytes(self, ref: str, offset: int = 0, length: int | None = None) -> bytes:
        """Stored bytes ``[offset, offset+length)``; shorter (or empty) past the end."""
        return b"".join(self.iter_bytes(ref, offset, length))

    def _iter_lines(self, ident: str) -> Iterator[tuple[int, bytes]]:
        return split_lines(self._chunks(ident, 0, None, CHUNK))

    def read_lines(
        self, ref: str, start: int = 1, end: int | None = None
    ) -> builtins.list[str]:
        """Lines ``start`` to ``end`` inclusive (1-based), without their ``\\n``.

        Bytes that are not UTF-8 are shown as U+FFFD. Lines past the end are
        simply absent.
        """
        if start < 1 or (end is not None and end < 1):
            raise StoreError("line numbers start at 1")
        ident = self._ident(ref)
        self._guarded(lambda: self._touch_read(ident))
        out: builtins.list[str] = []
        if end is not None and end < start:
            return out
        for number, line in self._iter_lines(ident):
            if end is not None and number > end:
                break
            if number >= start:
                out.append(line.decode("utf-8", "replace"))
        return out

    def grep(
        self,
        ref: str,
        pattern: str,
        *,
        context: int = 0,
        max_matches: int = 100,
        ignore_case: bool = False,
        fixed: bool = False,
        max_line_chars: int = 2000,
    ) -> GrepResult:
        """Where ``pattern`` matches, line by line: each match's byte offset and line number.

        ``pattern`` is a regular expression run in linear time (RE2, the
        ``re2`` extra; without it only plain text is searched), or literal
        text with ``fixed``. Each match carries up to ``context`` lines before
        and after. At most ``max_matches`` matches are returned; ``truncated``
        says that more exist. A line of up to ``max_line_chars`` bytes is
        shown whole; a longer one as windows of that size around its matches,
        so one giant line cannot flood the caller. Text is decoded as UTF-8
        (U+FFFD for other bytes). A pattern that is invalid or cannot be run
        safely raises ``ValueError`` saying why.
        """
        if context < 0 or max_matches < 1 or max_line_chars < 1:
            raise ValueError("context must be >= 0, max_matches and max_line_chars >= 1")
        matcher = compile_pattern(pattern, ignore_case=ignore_case, fixed=fixed)
        ident = self._ident(ref)
        self._guarded(lambda: self._touch_read(ident))
        segments = line_segments(self._chunks(ident, 0, None, CHUNK), skip=matcher,
                                 context=context)
        return search(segments, matcher, context=context, max_matches=max_matches,
                      width=min(max_line_chars, OVERLAP))

    # ------------------------------------------------------------------ cleaning
    def gc(self, dry_run: bool = False) -> GcReport:
        """Apply the age and total-size limits and remove stale temporaries.

        Evicts artifacts not read for ``max_age_days``, then the least recently
        read ones while the total is over ``max_total_size``. Anything read or
        written within the last hour stays; ``over_limit`` then says the store
        is still too big. With ``dry_run`` nothing is removed.
        """
        report = GcReport(dry_run=dry_run)

        def run() -> None:
            now = self.clock()
            report.stale_temporaries = self._clean_temporaries(now - GRACE_SECONDS, dry_run)
            evict(self, report, self._scan(), by_age=True)

        self._guarded(run)
        return report
