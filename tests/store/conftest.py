"""Fixtures for the artifact store tests: stores of every kind and a movable clock."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcap.store import ArtifactStore, LocalStore, MemoryStore, StoreLimits

HOUR = 3600.0
DAY = 86400.0


class FakeClock:
    """Seconds since the epoch that only move when a test says so."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "local", "fsspec"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactStore]:
    """Each store kind, unlimited in total size so that nothing is evicted behind a test."""
    kind = request.param
    limits = StoreLimits(max_total_size=None)
    if kind == "memory":
        yield MemoryStore(limits=limits)
    elif kind == "local":
        yield LocalStore(tmp_path / "artifacts", limits=limits)
    else:
        pytest.importorskip("fsspec")
        from toolcap.store import FsspecStore

        url = f"memory://toolcap-tests/{uuid.uuid4().hex}"
        made = FsspecStore(url, limits=limits)
        yield made
        with contextlib.suppress(FileNotFoundError):
            made.fs.rm(made.url.removeprefix("memory://"), recursive=True)


def _visible(root: Path) -> list[Path]:
    hidden = {".tmp", ".usage", ".lru"}  # writes in progress; the total and eviction order
    return sorted(p for p in root.rglob("*") if p.is_file() and not hidden & set(p.parts))


@pytest.fixture
def visible_files() -> object:
    """``visible_files(root)``: every file under root but temporaries and the size journal."""
    return _visible
