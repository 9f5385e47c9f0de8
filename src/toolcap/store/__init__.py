"""Artifact stores: where toolcap keeps the full original of every output it cuts.

``open_store()`` picks one: an explicit location, else ``TOOLCAP_ARTIFACTS``,
else the configured ``artifacts`` value, else a directory under the user's
cache. A location with a scheme (``s3://bucket/prefix``) opens an
:class:`FsspecStore` (extra ``toolcap[s3]``); a path or ``file://`` URL opens a
:class:`LocalStore`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from toolcap.core._errors import ArtifactNotFoundError, DamagedArtifactError, StoreError
from toolcap.core._lazy import lazy_names
from toolcap.core._refs import InvalidReferenceError, parse_ref
from toolcap.core._store_limits import StoreLimits
from toolcap.store._limits import GRACE_SECONDS

if TYPE_CHECKING:
    from toolcap.store._backend import Clock, StoreBackend, store_errors
    from toolcap.store._base import ArtifactStore
    from toolcap.store._fsspec import FsspecStore
    from toolcap.store._local import LocalStore, default_root
    from toolcap.store._memory import MemoryStore
    from toolcap.store._records import ArtifactInfo, GcReport, GrepMatch, GrepResult
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
    "DamagedArtifactError",
    "FsspecStore",
    "GcReport",
    "GrepMatch",
    "GrepResult",
    "InvalidReferenceError",
    "LocalStore",
    "MemoryStore",
    "StoreBackend",
    "StoreError",
    "StoreLimits",
    "UnavailableStore",
    "default_root",
    "grep_rows",
    "open_store",
    "parse_ref",
    "resolve_location",
    "store_errors",
]

# The store's parts are loaded on first use: a module of the package (the regular
# expressions ``keep_lines`` uses, say) is imported without the backends, and a
# command that keeps nothing (``toolcap cap --no-spill``) loads none of them.
_LAZY = {name: f"{__name__}.{module}" for name, module in {
    "ArtifactInfo": "_records",
    "ArtifactStore": "_base",
    "ArtifactWriter": "_writer",
    "Clock": "_backend",
    "FsspecStore": "_fsspec",
    "GcReport": "_records",
    "GrepMatch": "_records",
    "GrepResult": "_records",
    "LocalStore": "_local",
    "MemoryStore": "_memory",
    "StoreBackend": "_backend",
    "default_root": "_local",
    "grep_rows": "_search",
    "store_errors": "_backend",
}.items()}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


#: Environment variable naming the artifact store (a directory or an fsspec URL).
ENV_VAR = "TOOLCAP_ARTIFACTS"


def resolve_location(location: str | None = None, *, configured: str | None = None) -> str | None:
    """The store location in force: ``location``, else ``$TOOLCAP_ARTIFACTS``, else
    ``configured`` (the ``artifacts`` configuration value); ``None`` means the default."""
    for candidate in (location, os.environ.get(ENV_VAR), configured):
        if candidate:
            return candidate
    return None


class UnavailableStore:
    """Stands for a store that could not be opened: every put and stream raises ``reason``.

    The finalizer and streaming then deliver bounded output and say why nothing
    was kept, instead of failing.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def put(self, data: bytes, *, tool: str | None = None) -> str:
        """Raise :class:`StoreError` with the reason."""
        raise StoreError(self.reason)

    def open_writer(self, *, tool: str | None = None) -> ArtifactWriter:
        """Raise :class:`StoreError` with the reason."""
        raise StoreError(self.reason)


def open_store(
    location: str | None = None,
    *,
    configured: str | None = None,
    limits: StoreLimits | None = None,
    clock: Clock | None = None,
) -> ArtifactStore:
    """Open the artifact store at ``location`` (see :func:`resolve_location`).

    Nothing is created until the first write. ``limits`` bounds it (the
    ``[store]`` table, ``Config.store``; the defaults when omitted). Raises
    :class:`toolcap.StoreError` when the location needs a missing extra or is
    not a valid URL.
    """
    from toolcap.store._local import LocalStore

    where = resolve_location(location, configured=configured)
    if where is None:
        return LocalStore(None, limits=limits, clock=clock)
    scheme, sep, rest = where.partition("://")
    if not sep:
        return LocalStore(where, limits=limits, clock=clock)
    if scheme.lower() == "file":
        return LocalStore(rest or "/", limits=limits, clock=clock)
    from toolcap.store._fsspec import FsspecStore

    return FsspecStore(where, limits=limits, clock=clock)
