"""An in-memory artifact store, for tests of the layers above and for short scripts.

It is also the short example of a backend: these few methods are all a store
needs (see :class:`toolcap.store.StoreBackend`); hashing, cuts, reads, search,
eviction and verification come from :class:`toolcap.store.ArtifactStore`.
"""

from __future__ import annotations

import dataclasses
import io
import threading
from typing import IO

from toolcap.core._store_limits import StoreLimits
from toolcap.store._backend import Clock
from toolcap.store._base import ArtifactStore
from toolcap.store._records import ArtifactInfo

__all__ = ["MemoryStore"]


class MemoryStore(ArtifactStore):
    """Artifacts in a dict, gone with the process.

    ``writes`` counts artifacts actually written, so that a test can prove that
    storing the same content twice writes once.
    """

    def __init__(self, *, limits: StoreLimits | None = None, clock: Clock | None = None) -> None:
        super().__init__(limits=limits, clock=clock)
        self.data: dict[str, bytes] = {}  # public, so that a test can damage an artifact
        self._info: dict[str, ArtifactInfo] = {}
        self._lock = threading.Lock()
        self.writes = 0

    def __repr__(self) -> str:
        return f"MemoryStore({len(self.data)} artifacts)"

    @property
    def location(self) -> str:
        """``memory``."""
        return "memory"

    def new_spool(self) -> IO[bytes]:
        return io.BytesIO()  # no file: the default spool is a temporary file

    def publish(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        spool.seek(0)
        data = spool.read()
        with self._lock:
            if ident in self.data:
                return
            self._info[ident] = dataclasses.replace(info, location=f"memory:{ident}")
            self.data[ident] = data
            self.writes += 1

    def exists(self, ident: str) -> bool:
        return ident in self.data

    def scan(self) -> list[tuple[str, int, float]]:
        with self._lock:
            return [(i, len(d), self._info[i].last_read) for i, d in self.data.items()]

    def load_info(self, ident: str) -> ArtifactInfo:
        try:
            return self._info[ident]
        except KeyError:
            raise FileNotFoundError(ident) from None

    def read_range(self, ident: str, start: int, end: int) -> bytes:
        try:
            return self.data[ident][start:end]
        except KeyError:
            raise FileNotFoundError(ident) from None

    def object_size(self, ident: str) -> int:
        try:
            return len(self.data[ident])
        except KeyError:
            raise FileNotFoundError(ident) from None

    def touch(self, ident: str, when: float) -> None:
        with self._lock:
            if ident in self._info:
                self._info[ident] = dataclasses.replace(self._info[ident], last_read=when)

    def remove(self, ident: str) -> None:
        with self._lock:
            if ident not in self.data:
                raise FileNotFoundError(ident)
            del self.data[ident]
            del self._info[ident]
