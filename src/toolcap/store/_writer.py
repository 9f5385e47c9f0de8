"""Writing artifacts: what a one-shot put stores, and streaming writes.

A streaming write hashes as the bytes arrive and keeps at most the
largest-artifact limit.

Below the limit every chunk goes to one spool. Past it, the spool keeps the
head and a second spool is used as a ring buffer holding the last bytes seen,
so a stream of any length costs the limit in disk space and one chunk in
memory. ``commit`` assembles exactly what a one-shot ``put`` of the whole
stream would store, under the same reference.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any

from toolcap.core._errors import StoreError
from toolcap.core._jsonindex import HeldDocument
from toolcap.core._refs import ID_LENGTH, format_ref
from toolcap.core._utf8 import sanitize
from toolcap.store._backend import StoreBackend, store_errors
from toolcap.store._limits import SNAP_WINDOW, snap_head, snap_tail
from toolcap.store._lineindex import LineMarks, Marks
from toolcap.store._records import ArtifactInfo

__all__ = ["ArtifactWriter", "as_bytes", "line_counter"]

_COPY = 1 << 20
PARALLEL_MIN = 1 << 18  # below this a thread costs more than it saves


def as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    """The bytes a one-shot put stores for ``data`` (text: its UTF-8 encoding)."""
    if isinstance(data, str):
        # Lone surrogates cannot be encoded: store them as U+FFFD, as the cut shows them.
        return sanitize(data).encode("utf-8")
    return bytes(data)


def line_counter(raw: bytes, stored: bytes) -> Callable[[], tuple[int, Marks]]:
    """Start counting the line breaks of ``raw`` and marking the lines of ``stored``.

    ``stored`` is ``raw`` itself, or its head and tail when the original is cut.
    The returned callable waits for ``(line breaks of raw, line marks of stored)``.
    A big count runs in a thread so that it overlaps the write of the same bytes
    (file writes release the GIL). Nothing is counted for content already stored.
    """

    def count() -> tuple[int, Marks]:
        # In slices (LineMarks.feed counts a mark's span at a time), so that the
        # GIL changes hands and the writer gets into its (GIL-free) system call.
        marks = LineMarks()
        marks.feed(stored)
        newlines = marks.newlines if stored is raw else raw.count(b"\n")
        return newlines, marks.marks()

    if len(raw) < PARALLEL_MIN:
        counted = count()
        return lambda: counted
    result: list[tuple[int, Marks]] = []
    worker = threading.Thread(target=lambda: result.append(count()), daemon=True)
    worker.start()

    def wait() -> tuple[int, Marks]:
        worker.join()
        return result[0]

    return wait


class ArtifactWriter:
    """Write an artifact in chunks: ``write()`` any number of times, then ``commit()``.

    As a context manager it commits on a clean exit and aborts on an exception.
    A writer that is neither committed nor aborted (a killed process) leaves
    only a hidden temporary that ``ArtifactStore.gc`` removes later. ``commit``
is called with the id, the spool and the record, and publishes them.
    """

    #: ``write`` takes each chunk's count of line breaks, when the caller has it
    #: (:class:`toolcap.protocols.CountingStreamWriter`): the line index needs it.
    wants_newlines = True

    def __init__(
        self,
        store: StoreBackend,
        commit: Callable[[str, IO[bytes], ArtifactInfo], None],
        *,
        tool: str | None = None,
    ) -> None:
        self._store = store
        self._publish = commit
        self._tool = tool
        self._limit = store.limits.max_artifact_size
        self._hash = hashlib.sha256()
        self._total = 0
        self._lines = LineMarks()  # counts line breaks; marks them while nothing is cut
        self._document = HeldDocument(self._limit)  # a JSON document's bytes, for its index
        self._last = b""
        self._ring: IO[bytes] | None = None
        self._ring_count = 0  # bytes ever written into the ring
        # How far a partial artifact's head surely reaches (it ends at a line break in
        # its last SNAP_WINDOW bytes), and the hash state and line breaks there: commit
        # then hashes and indexes the stored bytes without reading the head back.
        self._head_sure = (max(0, store.limits.split()[0] - SNAP_WINDOW)
                           if self._limit is not None else None)
        self._at_head: tuple[Any, int] | None = None
        self._ref: str | None = None
        self._closed = False
        with store_errors(store.location):
            self._spool = store.new_spool()

    @property
    def ref(self) -> str | None:
        """The reference, once committed."""
        return self._ref

    def write(self, chunk: bytes | bytearray | memoryview, newlines: int | None = None) -> None:
        """Append ``chunk`` to the artifact. Raises StoreError if the store fails.

        ``newlines``: the chunk's line breaks, when the caller counted them anyway
        (counting holds the interpreter's lock; hashing and writing do not).
        """
        if self._closed:
            raise StoreError("artifact writer is already closed")
        data = chunk if isinstance(chunk, bytes) else bytes(chunk)
        if not data:
            return
        view = memoryview(data)
        sure = self._head_sure
        if sure is not None and self._at_head is None and sure < self._total + len(data):
            before = sure - self._total
            self._hash.update(view[:before])
            self._at_head = (self._hash.copy(), self._lines.newlines + data.count(b"\n", 0, before))
            self._hash.update(view[before:])
        else:
            self._hash.update(data)
        self._total += len(data)
        self._lines.feed(data, newlines)
        self._document.feed(data)
        self._last = data[-1:]
        try:
            with store_errors(self._store.location):
                self._append(view, len(data))
        except StoreError:
            self.abort()
            raise

    def _append(self, view: memoryview, size: int) -> None:
        if self._limit is None or (self._ring is None and self._total <= self._limit):
            self._spool.write(view)
            return
        if self._ring is None:
            # This chunk crosses the limit: the part of it still in the head goes
            # to the spool, and what follows the head moves on to the ring.
            already = self._total - size
            head, _ = self._store.limits.split()
            if already < head:
                self._spool.write(view[: head - already])
                view = view[head - already :]
            self._start_ring()
        self._ring_write(view)

    def _start_ring(self) -> None:
        # First overflow: the spool keeps the head, what followed it moves to the ring.
        head, _ = self._store.limits.split()
        self._ring = self._store.new_spool()
        spool = self._spool
        spool.flush()
        end = spool.seek(0, 2)
        pos = head
        while pos < end:
            spool.seek(pos)
            block = spool.read(min(_COPY, end - pos))
            self._ring_write(memoryview(block))
            pos += len(block)
        spool.truncate(head)
        spool.seek(head)
        spool.flush()
        self._store.settle(spool)  # the head is final: its flush can overlap the rest

    def _ring_write(self, view: memoryview) -> None:
        assert self._ring is not None
        _, size = self._store.limits.split()
        if len(view) > size:
            self._ring_count += len(view) - size
            view = view[len(view) - size :]
        pos = self._ring_count % size
        first = min(len(view), size - pos)
        self._ring.seek(pos)
        self._ring.write(view[:first])
        if first < len(view):
            self._ring.seek(0)
            self._ring.write(view[first:])
        self._ring_count += len(view)

    def _assemble(self) -> tuple[int, str, Marks] | None:
        """Turn head spool + ring into head + tail in the spool, if cut: the head's
        length, and the SHA-256 and line marks of the stored bytes."""
        if self._ring is None:
            return None
        head_budget, size = self._store.limits.split()
        spool, ring = self._spool, self._ring
        spool.seek(max(0, head_budget - SNAP_WINDOW))
        window_start = spool.tell()
        window = spool.read(head_budget - window_start)
        head = window_start + snap_head(window, len(window))
        # The head's hash and line breaks as far as it surely reaches were kept as it
        # was written; only its last bytes and the tail (copied below) are added.
        assert self._at_head is not None and window_start == self._head_sure
        state, newlines = self._at_head
        digest = state.copy()
        digest.update(window[: head - window_start])
        marks = self._lines.resumed(head, newlines + window.count(b"\n", 0, head - window_start))
        spool.truncate(head)
        spool.seek(head)
        start = self._ring_count % size  # the ring is full: the oldest byte is here
        pieces = [(start, size), (0, start)]
        ring.seek(start)
        first = ring.read(min(SNAP_WINDOW, size - start))
        if len(first) < SNAP_WINDOW:
            ring.seek(0)
            first += ring.read(SNAP_WINDOW - len(first))
        skip = snap_tail(first, size)
        for lo, hi in pieces:
            pos = lo
            while pos < hi:
                ring.seek(pos)
                block = ring.read(min(_COPY, hi - pos))
                if not block:
                    raise OSError("artifact spool shrank while it was being written")
                pos += len(block)
                if skip:
                    dropped = min(skip, len(block))
                    block, skip = block[dropped:], skip - dropped
                spool.write(block)
                digest.update(block)
                marks.feed(block)
        return head, digest.hexdigest(), marks.marks()

    def commit(self) -> str:
        """Store what was written and return its reference (same as ``put`` would)."""
        if self._ref is not None:
            return self._ref
        if self._closed:
            raise StoreError("artifact writer was aborted")
        try:
            with store_errors(self._store.location):
                assembled = self._assemble()
                self._spool.flush()
                stored = self._spool.seek(0, 2)
                if assembled is None:
                    head, stored_sha256, marks = None, None, self._lines.marks()
                else:
                    head, stored_sha256, marks = assembled
                    self._document.drop()
        except StoreError:
            self.abort()
            raise
        digest = self._hash.hexdigest()
        now = self._store.clock()
        info = ArtifactInfo(
            ref=format_ref(digest),
            sha256=digest,
            bytes=stored,
            original_bytes=self._total,
            lines=self._lines.newlines + (1 if self._total and self._last != b"\n" else 0),
            created=now,
            last_read=now,
            tool=self._tool,
            partial=head is not None,
            head_bytes=head,
            stored_sha256=stored_sha256,
            line_marks=marks,
            json_index=self._document.index(),
        )
        try:
            self._publish(digest[:ID_LENGTH], self._spool, info)
        finally:
            self._release()
        self._ref = info.ref
        return info.ref

    def abort(self) -> None:
        """Discard everything written; idempotent."""
        self._release()

    def _release(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._document.drop()
        self._store.drop_spool(self._spool)
        if self._ring is not None:
            self._store.drop_spool(self._ring)

    def __enter__(self) -> ArtifactWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and not self._closed:
            self.commit()
        else:
            self.abort()
