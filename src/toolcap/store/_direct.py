"""A big artifact's bytes written straight to the disk, past the page cache.

A write into the page cache copies the bytes into pages the kernel takes from
its free memory. On a virtual machine that hands freed memory back to its host
(free page reporting, ballooning: the project's 2-core VM does), every such page
is first faulted in again by the host: writing a 10 MB artifact took 3 ms of
processor time when the pages had just been freed and 40-110 ms when they had
not, and which one a write got was not in the writer's hands. The local store
kept big artifacts out of the cache anyway (flushed, then dropped:
:func:`toolcap.store._flush.drop_cached`), since they are written once and read
back rarely and by range.

So an artifact of :data:`DIRECT_MIN` bytes or more is written with ``O_DIRECT``:
its bytes go from a small page-aligned buffer of the process's own, reused from
write to write, to the device, and the page cache is never filled with them.
The write returns once the device has taken the bytes (the VM's disk takes about
1.2 GB/s: 8 ms for 10 MB, with 1 ms of processor time instead of 3-100 ms): past
the page cache, not yet durable (the device may cache them, and the file's
metadata is not committed); durability is the flush's that follows, as before.
Only whole aligned blocks go that way; the last partial block is written
through the cache. Where the file system refuses direct writes (``EINVAL``),
or the platform has no ``O_DIRECT``, the bytes are written the usual way, from
where the direct writes stopped: the file always holds exactly the data.

A device that takes a direct write slower than :data:`SLOW_BELOW` (a network file
system, a busy or throttled disk) would make every big put wait for it, where the
page cache would not: after one such write the process writes the usual way.

Such a write mostly waits for the device, so a big put starts it on a thread
(:class:`SpoolWrite`) and hashes the same bytes meanwhile, rather than one after
the other: the reference is known about when the bytes are written.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from typing import IO, Protocol

__all__ = ["DIRECT_MIN", "SLOW_BELOW", "SpoolWrite", "write_whole"]

#: An artifact of at least this many bytes is written past the page cache.
DIRECT_MIN = 1 << 20
# Offsets, lengths and buffer addresses of a direct write must be multiples of the
# device's logical block size: 4096 covers every common one (512, 4096).
_ALIGN = 4096
# Bytes copied into the aligned buffer and written at a time.
_CHUNK = 1 << 20
# Aligned buffers kept for reuse (one per writer at once: the proxy writes two).
_KEPT = 4
#: Bytes a second under which a direct write counts as slow (see the module doc).
SLOW_BELOW = 256 << 20
_on = True  # no direct write of this process has been slow

_O_DIRECT: int = getattr(os, "O_DIRECT", 0)
try:
    import fcntl
except ImportError:  # not on this platform: every write goes through the cache
    fcntl = None  # type: ignore[assignment]

_pool: list[mmap.mmap] = []
_pool_lock = threading.Lock()


def write_whole(spool: IO[bytes], data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` into the new, empty ``spool`` (a real file, open for writing),
    bypassing the page cache for the aligned bulk of data of :data:`DIRECT_MIN`
    bytes or more (see the module doc); the spool's position ends after it."""
    view = memoryview(data).cast("B")
    done = 0
    if len(view) >= DIRECT_MIN and _O_DIRECT and fcntl is not None and _on:
        spool.flush()  # nothing is buffered in a new spool; made sure of
        done = _write_direct(spool.fileno(), view[: len(view) - len(view) % _ALIGN])
        spool.seek(done)
    spool.write(view[done:])


def _write_direct(fd: int, view: memoryview) -> int:
    """Write ``view`` (a multiple of the alignment long) at offset 0 of ``fd`` with
    ``O_DIRECT``; the bytes written, from the start, before any refusal."""
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | _O_DIRECT)
    except OSError:
        return 0
    buffer = _take_buffer()
    done = 0
    started = time.perf_counter()
    try:
        while done < len(view):
            piece = view[done : done + _CHUNK]
            size = len(piece)
            buffer[:size] = piece
            written = os.pwrite(fd, memoryview(buffer)[:size], done)
            done += written
            if written != size or done % _ALIGN:
                break  # a short write: the rest goes the usual way
    except OSError:
        pass  # refused (a file system without direct writes): the rest goes the usual way
    finally:
        _give_back(buffer)
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)
    if done and done < SLOW_BELOW * (time.perf_counter() - started):
        global _on
        _on = False  # this device is slow: the page cache serves the next ones better
    return done


def _take_buffer() -> mmap.mmap:
    """A page-aligned buffer of :data:`_CHUNK` bytes, one a previous write touched if
    there is one (its pages are then in memory already)."""
    with _pool_lock:
        if _pool:
            return _pool.pop()
    return mmap.mmap(-1, _CHUNK)


def _give_back(buffer: mmap.mmap) -> None:
    with _pool_lock:
        if len(_pool) < _KEPT:
            _pool.append(buffer)
            return
    buffer.close()


class Spools(Protocol):
    """What :class:`SpoolWrite` asks of a store backend (``StoreBackend`` has it)."""

    def new_spool(self) -> IO[bytes]: ...
    def write_spool(self, spool: IO[bytes], data: bytes) -> None: ...
    def drop_spool(self, spool: IO[bytes]) -> None: ...


class SpoolWrite:
    """A whole put's bytes on their way, on a thread of their own, into a new spool of
    ``backend`` (written by its ``write_spool``)."""

    def __init__(self, backend: Spools, data: bytes) -> None:
        self._backend = backend
        self._spool = backend.new_spool()
        self._failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._write, args=(data,),
                                        name="toolcap-spool-write", daemon=True)
        try:
            self._thread.start()
        except BaseException:  # no thread to be had: the spool must not stay behind
            backend.drop_spool(self._spool)
            raise

    def _write(self, data: bytes) -> None:
        try:
            self._backend.write_spool(self._spool, data)
        except BaseException as exc:  # raised again by written(), on the caller's thread
            self._failure.append(exc)

    def written(self) -> IO[bytes]:
        """The spool, once every byte is in it; raises what the write raised."""
        self._thread.join()
        if self._failure:
            raise self._failure[0]
        return self._spool

    def discard(self) -> None:
        """Wait for the write and remove the spool (after it was published, its name)."""
        self._thread.join()
        self._backend.drop_spool(self._spool)
