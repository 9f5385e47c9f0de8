"""Newline-delimited JSON over file descriptors, in time linear in the bytes moved.

The relay reads whole lines of any length (a 10 MB tool result is one line).
Each chunk read from the descriptor is searched for a newline once, from where
the previous search stopped, and a line is joined once from its pieces, so the
cost of a line is proportional to its length, whatever the chunk sizes.
Raw ``os.read``/``os.write`` keep the reader threads free of the locks of
buffered file objects, which a thread still blocked in a read at interpreter
shutdown would otherwise hold. A descriptor another process made non-blocking
(Node.js does that to what it inherits) is waited on, never taken for closed.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator

from ..core._errors import WriterClosed

__all__ = ["FdWriter", "LineReader", "LongLine", "WriterClosed", "wait_ready", "write_all"]

_CHUNK = 1 << 18
#: What a read between lines asks for. A message is usually far smaller, and glibc
#: serves a buffer this size from its heap, while each larger one is a fresh mapping
#: (mmap, then mremap to what was read, then munmap): 15 us a read, against 1 us.
#: Only a line that spans reads is read by ``chunk_size`` (see LineReader's ``first_read``).
_FIRST_READ = 1 << 16


class LongLine:
    """A line longer than the reader's ``max_line``: its bytes as they are read, never whole.

    ``chunks()`` yields the pieces read so far (each released once yielded), then
    the rest of the line as it arrives, up to (not including) its newline.
    """

    def __init__(self, reader: LineReader, pieces: list[bytes | bytearray], limit: int) -> None:
        self._reader = reader
        self._pieces = collections.deque(pieces)
        self.limit = limit

    def chunks(self) -> Iterator[bytes]:
        """The line's bytes, in order; what is not taken is skipped by the reader."""
        while self._pieces:
            piece = self._pieces.popleft()
            for start in range(0, len(piece), _CHUNK):
                yield bytes(piece[start : start + _CHUNK])
            del piece  # released as soon as it is passed on
        yield from self._reader._rest_of_line()


class LineReader:
    """Reads ``\\n``-terminated lines from a file descriptor.

    With ``max_line``, a line that grows past that many bytes is not returned:
    it goes to ``on_long_line`` as a :class:`LongLine`, so that it is never held
    whole, and reading goes on with the next line.
    """

    def __init__(
        self,
        fd: int,
        chunk_size: int = _CHUNK,
        *,
        first_read: int = _FIRST_READ,
        max_line: int | None = None,
        on_long_line: Callable[[LongLine], None] | None = None,
    ) -> None:
        self._fd = fd
        self._chunk_size = chunk_size
        self._first_read = min(chunk_size, first_read)
        self._buf = b""
        self._pos = 0
        self._max_line = max_line if on_long_line is not None else None
        self._on_long_line = on_long_line
        self._in_long_line = False

    def readline(self) -> bytes | None:
        """Return the next line without its newline; ``None`` at end of input.

        A last line that lacks its newline is returned as a line. A trailing
        ``\\r`` is left in place (JSON parsing tolerates it as whitespace).
        """
        line = self.read_line()
        return bytes(line) if isinstance(line, bytearray) else line

    def read_line(self) -> bytes | bytearray | None:
        """:meth:`readline` without its last copy: a line that spans reads comes back
        as the ``bytearray`` it was gathered in (for a 200 MB result line, that copy
        was a tenth of the proxy's time), any other as ``bytes``.
        """
        # A line that spans reads grows in one buffer, which the allocator can give
        # back whole (many freed read-sized pieces would stay in the heap).
        acc = bytearray()
        while True:
            end = self._buf.find(b"\n", self._pos)
            if end >= 0:
                if not acc:
                    piece = self._buf[self._pos : end]
                    self._pos = end + 1
                    if self._max_line is not None and len(piece) > self._max_line:
                        self._long_line([piece], ended=True)
                        continue
                    return piece
                acc += memoryview(self._buf)[self._pos : end]
                self._pos = end + 1
                if self._max_line is not None and len(acc) > self._max_line:
                    self._long_line([acc], ended=True)
                    acc = bytearray()
                    continue
                return acc
            if self._pos < len(self._buf):
                acc += memoryview(self._buf)[self._pos :]
            self._buf = read_some(self._fd, self._chunk_size if acc else self._first_read)
            self._pos = 0
            if self._max_line is not None and len(acc) > self._max_line:
                self._long_line([acc], ended=not self._buf)
                acc = bytearray()
            if not self._buf:
                return acc if acc else None

    def _long_line(self, pieces: list[bytes | bytearray], *, ended: bool) -> None:
        assert self._on_long_line is not None and self._max_line is not None
        self._in_long_line = not ended
        self._on_long_line(LongLine(self, pieces, self._max_line))
        for _ in self._rest_of_line():
            pass  # what the handler left of the line is skipped

    def _rest_of_line(self) -> Iterator[bytes]:
        while self._in_long_line:
            end = self._buf.find(b"\n", self._pos)
            if end >= 0:
                piece = self._buf[self._pos : end]
                self._pos = end + 1
                self._in_long_line = False
                if piece:
                    yield piece
                return
            if self._pos < len(self._buf):
                piece = self._buf[self._pos :]
                self._pos = len(self._buf)
                yield piece
            self._buf = read_some(self._fd, self._chunk_size)
            self._pos = 0
            if not self._buf:
                self._in_long_line = False
                return


class FdWriter:
    """Writes whole lines to a file descriptor, one writer at a time.

    A ``cancelable`` writer's write that waits for the reader to make room ends when
    :meth:`close` is called (it raises WriterClosed): a reader that never reads (a
    server that stopped reading its stdin) then keeps neither the writing thread
    nor the one closing for ever. Its descriptor is made non-blocking for that.
    """

    def __init__(self, fd: int, *, cancelable: bool = False) -> None:
        self._fd = fd
        self._lock = threading.RLock()  # re-entered by a write within held_if_ready
        self.closed = False  # writes refused (the reader went, or close() was called)
        self._fd_open = True  # a failed write refuses the rest, but close() closes it
        #: When the write under way began to wait for the reader (``time.monotonic()``).
        self.waiting_since: float | None = None
        self._wake: tuple[int, int] | None = None  # a pipe close() writes a byte to
        self._wake_lock = threading.Lock()
        if cancelable:
            os.set_blocking(fd, False)
            self._wake = os.pipe()

    @contextlib.contextmanager
    def held_if_ready(self, size: int) -> Iterator[bool]:
        """Whether a line of ``size`` bytes (its newline apart) can be written now
        without blocking: no other thread is writing, and the pipe has room for it (a
        write of at most PIPE_BUF bytes to a pipe that polls writable never waits).
        While the block runs, writes from other threads wait, so that it still can."""
        if size >= select.PIPE_BUF or not self._lock.acquire(blocking=False):
            yield False
            return
        try:
            poller = select.poll()
            poller.register(self._fd, select.POLLOUT)
            ready = not self.closed and any(
                mask & select.POLLOUT for _, mask in poller.poll(0))
            yield ready
        finally:
            self._lock.release()

    def write_line(self, data: bytes) -> None:
        """Write ``data`` and a newline atomically with respect to other writers.

        Raises WriterClosed when the reader of the pipe has gone away.
        """
        with self._lock:
            if self.closed:
                raise WriterClosed
            view = memoryview(data + b"\n") if len(data) < 65536 else None
            try:
                if view is not None:
                    self._write_all(view)
                else:
                    # Avoid copying a large message just to append one byte.
                    self._write_all(memoryview(data))
                    self._write_all(memoryview(b"\n"))
            except OSError as exc:
                self.closed = True
                raise WriterClosed from exc
            finally:
                self.waiting_since = None

    def _write_all(self, view: memoryview) -> None:
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                self._wait_for_room()
                continue
            view = view[written:]

    def _wait_for_room(self) -> None:
        if self._wake is None:
            wait_ready(self._fd, write=True)
            return
        if self.waiting_since is None:
            self.waiting_since = time.monotonic()
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        poller.register(self._wake[0], select.POLLIN)
        if any(fd == self._wake[0] for fd, _ in poller.poll()):
            raise WriterClosed  # close() was called: give up what is left of the line

    def gone(self) -> bool:
        """Whether nobody reads the descriptor any more (a pipe whose reader closed it
        reports an error; a file, /dev/null or a terminal never goes)."""
        if self.closed:
            return True
        poller = select.poll()
        poller.register(self._fd, 0)  # hang-ups and errors are always reported
        return bool(poller.poll(0))

    def close(self) -> None:
        """Close the descriptor (first ending a write that waits, if cancelable); later
        writes raise WriterClosed."""
        with self._wake_lock:
            if self._wake is not None:
                with contextlib.suppress(OSError):
                    os.write(self._wake[1], b"\0")
        with self._lock:
            self.closed = True
            if self._fd_open:
                self._fd_open = False
                with contextlib.suppress(OSError):
                    os.close(self._fd)
            with self._wake_lock:  # no write waits on it now: it can go
                wake, self._wake = self._wake, None
            for fd in wake or ():
                os.close(fd)


def wait_ready(fd: int, *, write: bool) -> None:
    """Wait until ``fd`` can be written (or read) without blocking (or has failed)."""
    with contextlib.suppress(OSError, ValueError):
        poller = select.poll()
        poller.register(fd, select.POLLOUT if write else select.POLLIN)
        poller.poll()


def read_some(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from ``fd``, waiting if it is non-blocking; ``b""`` at its end."""
    while True:
        try:
            return os.read(fd, size)
        except BlockingIOError:
            wait_ready(fd, write=False)
        except OSError:
            return b""


def write_all(fd: int, data: bytes) -> bool:
    """Write all of ``data``, waiting whenever ``fd`` is non-blocking and full.

    False if the descriptor is gone (its reader closed it, or it was closed).
    """
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            wait_ready(fd, write=True)
            continue
        except OSError:
            return False
        view = view[written:]
    return True
