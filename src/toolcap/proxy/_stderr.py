"""The proxy's stderr: one writer thread, robust to a descriptor someone made non-blocking.

A Node.js process sets ``O_NONBLOCK`` on the stderr it inherits, and that flag
belongs to the open file, which every process sharing it sees: a plain write of
the proxy to such a stderr fails with ``BlockingIOError`` as soon as the reader
is slower than the writer. So the proxy never shares its stderr with the
upstream (the upstream gets a pipe of its own, relayed here line by line), and
everything written to stderr in this process (notices, messages, the upstream's
lines) goes through one queue and one thread that waits for the descriptor to
become writable instead of failing. The relay never waits for stderr: a client
that drains stderr slowly delays the lines, it does not lose them nor stall
results. Only the upstream's own output waits when too much of it is queued, as
it would with a stderr of its own.
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import select
import threading
import time
from typing import cast

from ._io import read_some, write_all

__all__ = ["StderrPump"]

#: Bytes of the upstream's stderr that may wait in memory before its relay waits too.
RELAY_BACKLOG = 1 << 20
#: Bytes of the proxy's own lines that may wait; past it the writing thread waits.
OWN_BACKLOG = 4 << 20
#: A line of the upstream longer than this is passed on in pieces.
_LINE_PIECE = 1 << 16
_READ = 1 << 16
#: Writes up to this size to a pipe with room are atomic and do not wait (PIPE_BUF).
_ATOMIC = 4096


class StderrPump:
    """Writes everything queued to ``fd`` on a thread of its own, in order."""

    def __init__(self, fd: int = 2) -> None:
        self._fd = fd
        self._queue: collections.deque[tuple[bytes, bool]] = collections.deque()
        self._queued = {True: 0, False: 0}  # bytes waiting: own lines, relayed lines
        self._cond = threading.Condition()
        self._broken = False
        self._relays: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._drain, name="toolcap-stderr", daemon=True)
        self._thread.start()

    # -- producers -----------------------------------------------------------

    def write(self, data: bytes, *, own: bool = True) -> None:
        """Queue ``data``; wait only while too much of its kind is already waiting."""
        if not data:
            return
        limit = OWN_BACKLOG if own else RELAY_BACKLOG
        with self._cond:
            while not self._broken and self._queued[own] and self._queued[own] + len(data) > limit:
                self._cond.wait()
            if self._broken:
                return  # nobody reads our stderr any more: nothing to keep it for
            if not self._queue and len(data) <= _ATOMIC and _writable_now(self._fd):
                # Nothing waiting and room for it: write now, so that the line is
                # there when the result it belongs to arrives.
                try:
                    written = os.write(self._fd, data)
                except BlockingIOError:
                    written = 0
                except OSError:
                    self._broken = True
                    return
                data = data[written:]
                if not data:
                    return
            self._queue.append((data, own))
            self._queued[own] += len(data)
            self._cond.notify_all()

    def relay(self, fd: int) -> None:
        """Pass on what is read from ``fd`` (the upstream's stderr) in whole lines, until EOF."""

        def run() -> None:
            partial = b""
            try:
                while chunk := read_some(fd, _READ):
                    data = partial + chunk
                    cut = data.rfind(b"\n") + 1
                    if cut == 0 and len(data) >= _LINE_PIECE:
                        cut = len(data)  # a very long line: pass it on in pieces
                    if cut:
                        self.write(data[:cut], own=False)
                    partial = data[cut:]
            finally:
                if partial:
                    self.write(partial + b"\n", own=False)
                with contextlib.suppress(OSError):
                    os.close(fd)

        thread = threading.Thread(target=run, name="toolcap-upstream-stderr", daemon=True)
        self._relays.append(thread)
        thread.start()

    def text_stream(self) -> io.TextIOWrapper:
        """A text stream (for ``sys.stderr``) whose every write is queued here whole."""
        raw = _QueuedRaw(self)
        return io.TextIOWrapper(
            io.BufferedWriter(cast("io.RawIOBase", raw), 1 << 16),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
            write_through=True,
        )

    def close(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the upstream's last lines and the queue to drain."""
        deadline = time.monotonic() + timeout
        for thread in self._relays:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            while self._queue and not self._broken:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)

    # -- the writer thread ---------------------------------------------------

    def _drain(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                data, own = self._queue[0]
            ok = write_all(self._fd, data)
            with self._cond:
                self._queue.popleft()
                self._queued[own] -= len(data)
                if not ok:
                    self._broken = True
                    self._queue.clear()
                    self._queued = {True: 0, False: 0}
                self._cond.notify_all()


def _writable_now(fd: int) -> bool:
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & select.POLLOUT for _, event in poller.poll(0))
    except (OSError, ValueError):
        return False


class _QueuedRaw(io.RawIOBase):
    def __init__(self, pump: StderrPump) -> None:
        super().__init__()
        self._pump = pump

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = bytes(data)
        self._pump.write(chunk)
        return len(chunk)
