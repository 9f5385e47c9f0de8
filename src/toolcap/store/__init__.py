"""Artifact stores: where toolcap keeps the full original of every output it cuts.

``open_store()`` picks one: an explicit location, else ``TOOLCAP_ARTIFACTS``,
else the configured ``artifacts`` value, else a directory under the user's
cache. A location with a scheme (``s3://bucket/prefix``) opens an
:class:`FsspecStore` (extra ``toolcap[s3]``); a path or ``file://`` URL opens a
:class:`LocalStore`.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from toolcap.core._errors import StoreError
from toolcap.core._refs import InvalidReferenceError, parse_ref
from toolcap.store._base import ArtifactStore, Clock
from toolcap.store._fsspec import FsspecStore  # fsspec itself is imported on first use
from toolcap.store._limits import GRACE_SECONDS, Limits
from toolcap.store._local import LocalStore, default_root
from toolcap.store._memory import MemoryStore
from toolcap.store._records import (
    ArtifactInfo,
    ArtifactNotFoundError,
    GcReport,
    GrepMatch,
    GrepResult,
)
from toolcap.store._search import grep_rows
from toolcap.store._writer import ArtifactWriter

__all__ = [
    "ENV_VAR",
    "GRACE_SECONDS",
    "ArtifactInfo",
    "ArtifactNotFoundError",
    "ArtifactStore",
    "ArtifactWriter",
    "Clock",
    "FsspecStore",
    "GcReport",
    "GrepMatch",
    "GrepResult",
    "InvalidReferenceError",
    "Limits",
    "LocalStore",
    "MemoryStore",
    "StoreError",
    "default_root",
    "grep_rows",
    "open_store",
    "parse_ref",
    "resolve_location",
]

#: Environment variable naming the artifact store (a directory or an fsspec URL).
ENV_VAR = "TOOLCAP_ARTIFACTS"


def resolve_location(location: str | None = None, *, configured: str | None = None) -> str | None:
    """The store location in force: ``location``, else ``$TOOLCAP_ARTIFACTS``, else
    ``configured`` (the ``artifacts`` configuration value); ``None`` means the default."""
    for candidate in (location, os.environ.get(ENV_VAR), configured):
        if candidate:
            return candidate
    return None


class _LimitSource(Protocol):
    """Anything with the three store limits, such as ``Config.store``."""

    @property
    def max_artifact_size(self) -> int | None: ...
    @property
    def max_total_size(self) -> int | None: ...
    @property
    def max_age_days(self) -> float: ...


def open_store(
    location: str | None = None,
    *,
    configured: str | None = None,
    limits: _LimitSource | None = None,
    max_artifact_size: int | str | None = Limits.DEFAULT_ARTIFACT,
    max_total_size: int | str | None = Limits.DEFAULT_TOTAL,
    max_age_days: float | None = Limits.DEFAULT_AGE_DAYS,
    clock: Clock | None = None,
) -> ArtifactStore:
    """Open the artifact store at ``location`` (see :func:`resolve_location`).

    Nothing is created until the first write. Raises :class:`toolcap.StoreError`
    when the location needs a missing extra or is not a valid URL. ``limits``
    (the ``[store]`` table, ``Config.store``) overrides the three limit arguments.
    """
    where = resolve_location(location, configured=configured)
    if limits is not None:
        max_artifact_size = limits.max_artifact_size
        max_total_size = limits.max_total_size
        max_age_days = limits.max_age_days
    options: dict[str, Any] = {
        "max_artifact_size": max_artifact_size,
        "max_total_size": max_total_size,
        "max_age_days": max_age_days,
        "clock": clock,
    }
    if where is None:
        return LocalStore(None, **options)
    scheme, sep, rest = where.partition("://")
    if not sep:
        return LocalStore(where, **options)
    if scheme.lower() == "file":
        return LocalStore(rest or "/", **options)
    return FsspecStore(where, **options)
