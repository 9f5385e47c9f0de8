"""An in-memory artifact store, for tests of the layers above and for short scripts."""

from __future__ import annotations

import dataclasses
import io
import threading
from collections.abc import Callable
from typing import IO

from toolcap.store._base import ArtifactStore, Clock
from toolcap.store._limits import Limits
from toolcap.store._records import ArtifactInfo

__all__ = ["MemoryStore"]


class MemoryStore(ArtifactStore):
    """Artifacts in a dict, gone with the process.

    ``writes`` counts artifacts actually written, so that a test can prove that
    storing the same content twice writes once.
    """

    def __init__(
        self,
        *,
        max_artifact_size: int | str | None = Limits.DEFAULT_ARTIFACT,
        max_total_size: int | str | None = Limits.DEFAULT_TOTAL,
        max_age_days: float | None = Limits.DEFAULT_AGE_DAYS,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(
            max_artifact_size=max_artifact_size,
            max_total_size=max_total_size,
            max_age_days=max_age_days,
            clock=clock,
        )
        self._data: dict[str, bytes] = {}
        self._info: dict[str, ArtifactInfo] = {}
        self._lock = threading.Lock()
        self.writes = 0

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._data)} artifacts)"

    @property
    def location(self) -> str:
        """``memory``."""
        return "memory"

    def _new_spool(self) -> IO[bytes]:
        return io.BytesIO()

    def _drop_spool(self, spool: IO[bytes]) -> None:
        spool.close()

    def _publish(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        spool.seek(0)
        self._publish_bytes(ident, spool.read(), lambda: info)

    def _publish_bytes(
        self, ident: str, data: bytes, make_info: Callable[[], ArtifactInfo]
    ) -> None:
        info = make_info()
        with self._lock:
            if ident in self._data:
                return
            self._info[ident] = dataclasses.replace(info, location=f"memory:{ident}")
            self._data[ident] = data
            self.writes += 1

    def _exists(self, ident: str) -> bool:
        return ident in self._data

    def _match(self, prefix: str) -> list[str]:
        return [ident for ident in list(self._data) if ident.startswith(prefix)]

    def _scan(self) -> list[tuple[str, int, float]]:
        with self._lock:
            return [(i, len(d), self._info[i].last_read) for i, d in self._data.items()]

    def _load_info(self, ident: str) -> ArtifactInfo:
        try:
            return self._info[ident]
        except KeyError:
            raise FileNotFoundError(ident) from None

    def _read(self, ident: str, start: int, end: int) -> bytes:
        try:
            return self._data[ident][start:end]
        except KeyError:
            raise FileNotFoundError(ident) from None

    def _touch(self, ident: str, when: float) -> None:
        with self._lock:
            if ident in self._info:
                self._info[ident] = dataclasses.replace(self._info[ident], last_read=when)

    def _remove(self, ident: str) -> None:
        with self._lock:
            if ident not in self._data:
                raise FileNotFoundError(ident)
            del self._data[ident]
            del self._info[ident]

    def _clean_temporaries(self, older_than: float, dry_run: bool) -> int:
        return 0
