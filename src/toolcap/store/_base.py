"""The artifact store: content-addressed, written once, bounded, readable by range.

:class:`ArtifactStore` holds everything that does not depend on where the bytes
live (hashing, the largest-artifact cut, reads by bytes and lines, search,
eviction, verification); a backend supplies the few primitives that
:class:`~toolcap.store._backend.StoreBackend` lists. It implements the
:class:`toolcap.protocols.ArtifactSink` protocol: ``put`` returns a reference or
raises :class:`toolcap.StoreError`, never a reference to something not stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
from collections.abc import Callable, Iterator
from typing import IO, NoReturn

from toolcap.core._errors import DamagedArtifactError, StoreError
from toolcap.core._jsonindex import index_of
from toolcap.core._refs import ID_LENGTH, PREFIX, format_ref, parse_ref
from toolcap.core._store_limits import StoreLimits
from toolcap.store._backend import Clock, StoreBackend, store_errors
from toolcap.store._direct import SpoolWrite
from toolcap.store._gc import evict, evict_by_size
from toolcap.store._limits import GRACE_SECONDS, kept_part
from toolcap.store._lineindex import Marks, start_for_line
from toolcap.store._records import (
    ArtifactInfo,
    ArtifactNotFoundError,
    GcReport,
    GrepResult,
)
from toolcap.store._regex import compile_pattern
from toolcap.store._search import OVERLAP, line_segments, search, split_lines
from toolcap.store._writer import ArtifactWriter, as_bytes, line_counter

__all__ = ["ArtifactStore", "Clock"]

log = logging.getLogger("toolcap.store")

CHUNK = 1 << 20  # read granularity for scans; bounds memory, not correctness
_RECORDS_KEPT = 4096  # records remembered for reads; past it the memory starts again


class ArtifactStore(StoreBackend):
    """Base class of the artifact stores (memory, local directory, fsspec URL).

    ``limits`` (a :class:`toolcap.StoreLimits`, the defaults when omitted) bound
    the store: an original over ``max_artifact_size`` keeps only its head and
    tail and its record says ``partial``; when a write takes the store over
    ``max_total_size`` the least recently read artifacts are evicted;
    ``max_age_days`` is applied by :meth:`gc`. Nothing read or written within
    the last hour is ever evicted. ``clock`` returns seconds since the epoch
    and exists so that tests can move time.

    A backend subclasses this and implements the primitives that
    :class:`~toolcap.store.StoreBackend` lists; :class:`MemoryStore` is the
    short example.
    """

    def __init__(self, *, limits: StoreLimits | None = None, clock: Clock | None = None) -> None:
        super().__init__(limits=limits, clock=clock)
        self._records: dict[str, ArtifactInfo] = {}  # by id: records read, see _open_read

    # ------------------------------------------------------------------ writing
    def put(self, data: bytes | bytearray | memoryview | str, *, tool: str | None = None) -> str:
        """Store ``data`` once and return its reference ``toolcap:<32 hex>``.

        ``str`` is stored as its UTF-8 encoding. If the same bytes are already
        stored, nothing is written (the artifact only counts as just used; a put
        of 1 MB or more has written a spool while it hashed, and removes it),
        unless what is stored no longer has its recorded size: then it is
        written again. Raises :class:`StoreError` on any failure.
        """
        raw = as_bytes(data)
        stored, head = kept_part(raw, self.limits)
        # A big put is written to its spool and counted (on threads) while it is
        # hashed, as writes and SHA-256 let go of the interpreter's lock; a repeated
        # put then writes for nothing, a small one is hashed first and costs only that.
        with store_errors(self.location):
            early = self.write_early(stored)
        try:
            counted = line_counter(raw, stored) if early is not None else None
            digest = hashlib.sha256(raw).hexdigest()
            with store_errors(self.location):
                return self._put_new(digest, raw, (stored, head), tool, early, counted)
        finally:
            if early is not None:
                early.discard()

    def _put_new(self, digest: str, raw: bytes, kept: tuple[bytes, int | None],
                 tool: str | None, early: SpoolWrite | None,
                 counted: Callable[[], tuple[int, Marks]] | None) -> str:
        ident, now = digest[:ID_LENGTH], self.clock()
        if self._kept(ident, now):
            return format_ref(digest)
        stored, head = kept
        counted = counted or line_counter(raw, stored)

        def make_info() -> ArtifactInfo:
            newlines, marks = counted()
            return ArtifactInfo(
                ref=format_ref(digest),
                sha256=digest,
                bytes=len(stored),
                original_bytes=len(raw),
                lines=newlines + (1 if raw and not raw.endswith(b"\n") else 0),
                created=now,
                last_read=now,
                tool=tool,
                partial=head is not None,
                head_bytes=head,
                stored_sha256=None if head is None else hashlib.sha256(stored).hexdigest(),
                line_marks=marks,
                json_index=None if head is not None else index_of(raw),
            )

        if early is None:
            self.publish_bytes(ident, stored, make_info)
        else:
            self.publish(ident, early.written(), make_info())
        self._after_write()
        return format_ref(digest)

    def _kept(self, ident: str, now: float) -> bool:
        """Whether ``ident`` is stored intact (then it counts as used at ``now``).

        What is stored with a size other than its record's is removed, so that
        the write that follows heals it.
        """
        try:
            if not self.exists(ident):
                return False
            info = self.info_or_none(ident)
            if info is not None and self.object_size(ident) == info.bytes:
                self.touch(ident, now)
                return True
            self._records.pop(ident, None)
            self.remove(ident)
        except FileNotFoundError:
            pass  # removed meanwhile by another process (a delete, an eviction): write it
        return False

    def open_writer(self, *, tool: str | None = None) -> ArtifactWriter:
        """A writer for content that arrives in chunks (a stream of any size).

        It hashes as it goes and keeps at most ``max_artifact_size`` bytes on
        disk; ``commit()`` returns the same reference ``put`` gives for the
        concatenated chunks, ``abort()`` leaves nothing behind.
        """
        return ArtifactWriter(self, self._commit_spool, tool=tool)

    def _commit_spool(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        """Called by the writer: publish unless the same content is already there."""
        with store_errors(self.location):
            if not self._kept(ident, info.created):
                self.publish(ident, spool, info)
                self._after_write()

    def _after_write(self) -> None:
        cap = self.limits.max_total_size
        if cap is None:
            return
        try:
            total = self.stored_total()  # kept incrementally where the backend can
            if total is not None and total <= cap:
                return
            order = self.eviction_order() if total is not None else None
            if order is not None and total is not None:
                evict_by_size(self, GcReport(dry_run=False), order, total)
                return
            entries = self.scan()
            if sum(size for _, size, _ in entries) > cap:
                evict(self, GcReport(dry_run=False), entries, by_age=False)
        except Exception as exc:  # the artifact is stored; eviction is best effort
            log.debug("artifact eviction after write failed: %s", type(exc).__name__)

    # ------------------------------------------------------------------ lookup
    def _ident(self, ref: str) -> str:
        hexpart = parse_ref(ref)
        ident = hexpart[:ID_LENGTH]
        with store_errors(self.location):
            if len(hexpart) >= ID_LENGTH:
                found = [ident] if self.exists(ident) else []
            else:
                found = sorted(self.match_prefix(hexpart))
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
        """The metadata record of an artifact (no content), once its size is checked.

        Raises :class:`DamagedArtifactError` when the stored size is not the
        recorded one.
        """
        return self._checked_info(self._ident(ref))

    def _checked_info(self, ident: str) -> ArtifactInfo:
        with store_errors(self.location, ident=ident):
            info = self.load_info(ident)
            size = self.object_size(ident)
        if size != info.bytes:
            self._damaged(ident, f"{size} bytes stored, {info.bytes} recorded")
        return info

    def _damaged(self, ident: str, why: str) -> NoReturn:
        # Removed, so that the next put of the same content stores it again.
        self._records.pop(ident, None)
        with contextlib.suppress(Exception):
            self.remove(ident)
        raise DamagedArtifactError(PREFIX + ident, why)

    def verify(self, ref: str) -> ArtifactInfo:
        """Check an artifact completely: its stored size and the hash of every byte.

        Returns its record; raises :class:`DamagedArtifactError` naming it (and
        removes it) when either does not match. The partial artifacts of
        versions that did not record the hash of their stored bytes are checked
        by size only. Reading to verify does not count as a use.
        """
        ident = self._ident(ref)
        info = self._checked_info(ident)
        for _ in self._chunks(ident, 0, None, CHUNK, expect=_stored_hash(info)):
            pass
        return info

    def list_artifacts(self) -> list[ArtifactInfo]:
        """Every artifact's record, newest first."""
        with store_errors(self.location):
            found = self.list_infos()
        return sorted(found, key=lambda i: (-i.created, i.ref))

    def delete(self, ref: str) -> None:
        """Delete an artifact now (no grace period: the caller asked for it)."""
        ident = self._ident(ref)
        self._records.pop(ident, None)
        with store_errors(self.location):
            self.remove(ident)

    # ------------------------------------------------------------------ reading
    def _open_read(self, ref: str) -> tuple[str, ArtifactInfo]:
        """The id and record of ``ref``, its stored size checked and its read recorded.

        A record read before is reused while the stored size still matches it (a
        record never changes but for its last use), so that a small range read
        costs the size check and the read, not a record read as well.
        """
        ident = self._ident(ref)
        info = self._records.get(ident)
        if info is not None:
            with store_errors(self.location, ident=ident):
                size = self.object_size(ident)
        if info is None or size != info.bytes:  # unknown, or re-stored: read it afresh
            info = self._checked_info(ident)
        now = self.clock()
        if self.touch_interval <= 0:
            with store_errors(self.location, ident=ident):
                self.touch(ident, now)
        elif now - info.last_read >= self.touch_interval:
            with store_errors(self.location, ident=ident):
                self.touch(ident, now)
            info = dataclasses.replace(info, last_read=now)  # what the interval is counted from
        if self._records.get(ident) is not info:
            if len(self._records) >= _RECORDS_KEPT:
                self._records.clear()
            self._records[ident] = info
        return ident, info

    def iter_bytes(
        self, ref: str, offset: int = 0, length: int | None = None, *, chunk_size: int = CHUNK
    ) -> Iterator[bytes]:
        """The stored bytes ``[offset, offset+length)`` in chunks (all of them by default).

        The stored size is checked first; a read of the whole artifact also
        checks its hash, at the end, and raises :class:`DamagedArtifactError`
        after the last chunk if it does not match.
        """
        if offset < 0 or (length is not None and length < 0):
            raise StoreError("offset and length must not be negative")
        ident, info = self._open_read(ref)
        end = None if length is None else offset + length
        whole = offset == 0 and (end is None or end >= info.bytes)
        expect = _stored_hash(info) if whole else None
        return self._chunks(ident, offset, end, chunk_size, expect=expect)

    def _chunks(
        self, ident: str, start: int, end: int | None, size: int, *, expect: str | None = None
    ) -> Iterator[bytes]:
        digest = hashlib.sha256() if expect is not None else None
        pos = start
        while end is None or pos < end:
            want = size if end is None else min(size, end - pos)
            with store_errors(self.location, ident=ident):
                block = self.read_range(ident, pos, pos + want)
            if not block:
                break
            if digest is not None:
                digest.update(block)
            yield block
            pos += len(block)
        if digest is not None and digest.hexdigest() != expect:
            self._damaged(ident, "its bytes do not match its hash")

    def read_bytes(self, ref: str, offset: int = 0, length: int | None = None) -> bytes:
        """Stored bytes ``[offset, offset+length)``; shorter (or empty) past the end."""
        return b"".join(self.iter_bytes(ref, offset, length))

    def read_lines(
        self, ref: str, start: int = 1, end: int | None = None
    ) -> list[str]:
        """Lines ``start`` to ``end`` inclusive (1-based), without their ``\\n``.

        Bytes that are not UTF-8 are shown as U+FFFD. Lines past the end are
        simply absent. The read starts at the artifact's line mark nearest
        before ``start`` (see :mod:`toolcap.store._lineindex`), so its cost
        depends on what is read, not on where; an artifact stored without
        marks is scanned from its start.
        """
        if start < 1 or (end is not None and end < 1):
            raise StoreError("line numbers start at 1")
        ident, info = self._open_read(ref)
        out: list[str] = []
        if end is not None and end < start:
            return out
        offset, before = start_for_line(info.line_marks, start)
        # From the start the whole is read, and so its hash checked on the way.
        expect = _stored_hash(info) if offset == 0 else None
        for number, line in split_lines(self._chunks(ident, offset, None, CHUNK, expect=expect)):
            number += before
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
        ident, info = self._open_read(ref)
        chunks = self._chunks(ident, 0, None, CHUNK, expect=_stored_hash(info))
        segments = line_segments(chunks, skip=matcher, context=context)
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
        with store_errors(self.location):
            now = self.clock()
            report.stale_temporaries = self.clean_temporaries(now - GRACE_SECONDS, dry_run)
            evict(self, report, self.scan(), by_age=True)
            if not dry_run:
                self.recount_total()
        return report


def _stored_hash(info: ArtifactInfo) -> str | None:
    """The SHA-256 the stored bytes must have (``None``: unknown, check the size only)."""
    return info.stored_sha256 if info.partial else info.sha256
