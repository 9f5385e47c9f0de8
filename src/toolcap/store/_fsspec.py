"""The artifact store on any fsspec URL (``s3://bucket/prefix``, ``gs://…``, …).

Needs the extra ``toolcap[s3]`` (fsspec, s3fs). Connection settings come only
from fsspec's and the backend's own configuration (``FSSPEC_S3_ENDPOINT_URL``,
``AWS_ENDPOINT_URL``, ``AWS_*`` credentials and region, fsspec's config file),
so every backend works with no toolcap-specific option. Layout under the prefix
is that of the local store, ``ab/<32 hex>`` and ``ab/<32 hex>.json``, plus
``.ls/<32 hex>/…``: the record spelled in an empty object's key
(:mod:`toolcap.store._listing`), so that listing, ``gc`` and eviction read one
listing (a request per thousand keys), not one record per artifact, and ``gc``
deletes in batches (S3's multi-object delete, through fsspec's ``rm`` of a
list). Artifacts written without such a key (older versions) are still read,
listed (their record is read) and evicted (their record's time is the last use).

Object stores make an upload visible only once complete, so bytes are uploaded
straight to their final key; on other file systems they go to ``.tmp/`` first
and are moved into place. Reads are range requests (``cat_file`` with start and
end), never a download of the whole object. A read is recorded in the metadata
object at most once a minute, which is ample against a one-hour eviction grace.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import IO, Any

from toolcap.core._errors import StoreError
from toolcap.core._refs import ARTIFACT_ID
from toolcap.core._store_limits import StoreLimits
from toolcap.store._backend import Clock
from toolcap.store._base import ArtifactStore
from toolcap.store._listing import FOLDER, listed_info, listing_name
from toolcap.store._records import ArtifactInfo
from toolcap.store._spools import clean_spools, new_local_spool

__all__ = ["FsspecStore"]

_ID = ARTIFACT_ID
# Back ends whose uploads become visible atomically, at completion.
_ATOMIC = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "memory"})


def _mtime(info: dict[str, Any]) -> float:
    for key in ("LastModified", "mtime", "updated", "last_modified", "created"):
        value = info.get(key)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
    return 0.0


class FsspecStore(ArtifactStore):
    """Artifacts under an fsspec URL; ``storage_options`` go to the file system as-is."""

    touch_interval = 60.0

    def __init__(
        self,
        url: str,
        *,
        storage_options: dict[str, Any] | None = None,
        limits: StoreLimits | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(limits=limits, clock=clock)
        try:
            import fsspec.core  # type: ignore[import-untyped]
        except ImportError:
            raise StoreError(
                f"the artifact store {url} needs fsspec: pip install 'toolcap[s3]'"
            ) from None
        options = dict(storage_options or {})
        if fsspec.core.split_protocol(url)[0] in (None, "file", "local"):
            # Object stores have no folders to make; fsspec's local file system makes
            # none unless asked, so a store in a new folder would fail its first put.
            options.setdefault("auto_mkdir", True)
        try:
            fs, path = fsspec.core.url_to_fs(url, **options)
        except ImportError as exc:
            raise StoreError(
                f"the artifact store {url} needs a backend: {exc} (pip install 'toolcap[s3]')"
            ) from None
        except ValueError as exc:
            raise StoreError(f"bad artifact store URL {url}: {exc}") from None
        self.fs = fs
        self.url = url
        self._root = str(path).rstrip("/")
        protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        self._atomic = any(p in _ATOMIC for p in protocols)
        self._scheme = str(protocols[0])
        self._sizes: dict[str, int] = {}  # content never changes, so neither does its size

    def __repr__(self) -> str:
        return f"FsspecStore({self.url!r})"

    def new_spool(self) -> IO[bytes]:
        return new_local_spool()  # named for this process: gc and the next writer clean orphans

    @property
    def location(self) -> str:
        """The store URL."""
        return self.url

    def _key(self, ident: str) -> str:
        if not _ID.fullmatch(ident):
            raise StoreError("refusing a malformed artifact id")
        return f"{self._root}/{ident[:2]}/{ident}"

    def _fresh(self, path: str) -> None:
        # fsspec caches listings per instance; other processes write too.
        self.fs.invalidate_cache(path)

    # ---------------------------------------------------------------- backend
    # The primitives of toolcap.store.StoreBackend, documented there; spools are
    # the default temporary files.
    def _write_record(self, ident: str, info: ArtifactInfo) -> None:
        record = json.dumps(info.record(), separators=(",", ":")).encode()
        self.fs.pipe_file(self._key(ident) + ".json", record)

    def _upload(self, ident: str, source: str | bytes) -> None:
        key = self._key(ident)
        target = key if self._atomic else f"{self._root}/.tmp/{uuid.uuid4().hex}.tmp"
        if isinstance(source, bytes):
            self.fs.pipe_file(target, source)
        else:
            self.fs.put_file(source, target)
        if target != key:
            self.fs.mv(target, key)
        self._fresh(key.rsplit("/", 1)[0])

    def _write_name(self, info: ArtifactInfo) -> str | None:
        name = listing_name(info)
        if name is not None:
            self.fs.pipe_file(f"{self._root}/{FOLDER}/{name}", b"")
        return name

    def publish(self, ident: str, spool: IO[bytes], info: ArtifactInfo) -> None:
        spool.flush()
        self._write_record(ident, info)  # the record first: visible bytes always have one
        self._write_name(info)  # and their listed name
        self._upload(ident, spool.name)

    def publish_bytes(
        self, ident: str, data: bytes, make_info: Callable[[], ArtifactInfo]
    ) -> None:
        info = make_info()
        self._write_record(ident, info)
        self._write_name(info)
        self._upload(ident, data)

    def exists(self, ident: str) -> bool:
        key = self._key(ident)
        self._fresh(key.rsplit("/", 1)[0])
        return bool(self.fs.isfile(key))

    def match_prefix(self, prefix: str) -> list[str]:
        folder = f"{self._root}/{prefix[:2]}"
        self._fresh(folder)
        try:
            names = [p.rsplit("/", 1)[-1] for p in self.fs.ls(folder, detail=False)]
        except FileNotFoundError:
            return []
        return [n for n in names if _ID.fullmatch(n) and n.startswith(prefix)]

    def _listing(self) -> dict[str, dict[str, Any]]:
        self._fresh(self._root)
        try:
            found = self.fs.find(self._root, detail=True)
        except FileNotFoundError:
            return {}
        return dict(found) if isinstance(found, dict) else {}

    def _catalog(self) -> _Catalog:
        """One listing of the store (a request per thousand keys), sorted out."""
        catalog = _Catalog()
        names, spools = f"{self._root}/{FOLDER}/", f"{self._root}/.tmp/"
        for path, meta in self._listing().items():
            if meta.get("type", "file") != "file":
                continue
            if path.startswith(names):
                info = listed_info(path[len(names):], "")
                if info is not None:
                    catalog.named.setdefault(info.id, []).append((path, info))
                continue
            name = path.rsplit("/", 1)[-1]
            if path.startswith(spools):
                catalog.spools.append((path, _mtime(meta)))
            elif _ID.fullmatch(name):
                catalog.data[name] = (int(meta.get("size") or 0), _mtime(meta))
            elif name.endswith(".json") and _ID.fullmatch(name[:-5]):
                catalog.records[name[:-5]] = (path, _mtime(meta))
        return catalog

    def scan(self) -> list[tuple[str, int, float]]:
        catalog = self._catalog()
        return [(ident, size, catalog.last_use(ident)) for ident, (size, _) in catalog.data.items()]

    def list_infos(self) -> list[ArtifactInfo]:
        catalog = self._catalog()
        found = []
        for ident in catalog.data:
            info = catalog.latest(ident)
            if info is None:
                found_info = self.info_or_none(ident)  # written without a name: read its record
            else:
                found_info = dataclasses.replace(
                    info, location=f"{self._scheme}://{self._key(ident)}")
            if found_info is not None:
                found.append(found_info)
        return found

    def remove_unused(self, victims: list[tuple[str, float]], before: float) -> list[str]:
        catalog = self._catalog()  # the last uses again, for the whole batch at once
        gone = [ident for ident, _ in victims
                if ident in catalog.data and catalog.last_use(ident) <= before]
        if gone:
            # The bytes first (the commit point), then what describes them.
            self.fs.rm([self._key(ident) for ident in gone])
            rest = [catalog.records[i][0] for i in gone if i in catalog.records]
            rest += [path for i in gone for path, _ in catalog.named.get(i, [])]
            if rest:
                self.fs.rm(rest)
            for ident in gone:
                self._sizes.pop(ident, None)
            self._fresh(self._root)
        return gone

    def load_info(self, ident: str) -> ArtifactInfo:
        raw = self.fs.cat_file(self._key(ident) + ".json")
        try:
            record = json.loads(raw)
        except ValueError:
            raise StoreError(f"damaged metadata for artifact {ident}") from None
        info = ArtifactInfo.from_record(record, location=f"{self._scheme}://{self._key(ident)}")
        self._sizes[ident] = info.bytes
        return info

    def read_range(self, ident: str, start: int, end: int) -> bytes:
        size = self._sizes.get(ident)
        if size is None:
            size = self.load_info(ident).bytes
        end = min(end, size)
        if start >= end:
            return b""
        data: bytes = self.fs.cat_file(self._key(ident), start=start, end=end)
        return data

    def object_size(self, ident: str) -> int:
        key = self._key(ident)
        self._fresh(key.rsplit("/", 1)[0])  # a HEAD request, not a cached listing
        return int(self.fs.size(key))

    def touch(self, ident: str, when: float) -> None:
        info = self.load_info(ident)
        used = dataclasses.replace(info, last_read=when)
        self._write_record(ident, used)
        name = self._write_name(used)  # the new name first: the use is never unlisted
        old = listing_name(info)
        if old is not None and old != name:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm_file(f"{self._root}/{FOLDER}/{old}")

    def remove(self, ident: str) -> None:
        key = self._key(ident)
        self.fs.rm_file(key)
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(key + ".json")
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(f"{self._root}/{FOLDER}/{ident}", recursive=True)
        self._sizes.pop(ident, None)
        self._fresh(key.rsplit("/", 1)[0])

    def clean_temporaries(self, older_than: float, dry_run: bool) -> int:
        catalog = self._catalog()
        stale = [path for path, mtime in catalog.spools if mtime < older_than]
        stale += [path for ident, (path, mtime) in catalog.records.items()
                  if ident not in catalog.data and mtime < older_than]  # bytes never arrived
        for ident, named in catalog.named.items():
            latest = catalog.latest(ident)
            for path, info in named:  # an artifact's older names (racing readers), or no bytes
                if info is not latest or (ident not in catalog.data and info.created < older_than):
                    stale.append(path)
        if stale and not dry_run:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(stale)
            self._fresh(self._root)
        # What killed writers left on this machine, and old spools of live ones.
        return len(stale) + clean_spools(older_than, dry_run)


@dataclasses.dataclass
class _Catalog:
    """What one listing of an object store holds, by artifact id."""

    data: dict[str, tuple[int, float]] = dataclasses.field(default_factory=dict)  # size, time
    records: dict[str, tuple[str, float]] = dataclasses.field(default_factory=dict)  # key, time
    named: dict[str, list[tuple[str, ArtifactInfo]]] = dataclasses.field(default_factory=dict)
    spools: list[tuple[str, float]] = dataclasses.field(default_factory=list)  # key, time

    def latest(self, ident: str) -> ArtifactInfo | None:
        """The listed record with the latest use (two names: a reader raced another)."""
        named = self.named.get(ident)
        return max((info for _, info in named), key=lambda i: i.last_read) if named else None

    def last_use(self, ident: str) -> float:
        """From the listed name; else the record's time (rewritten on use); else the bytes'."""
        info = self.latest(ident)
        if info is not None:
            return info.last_read
        record = self.records.get(ident)
        return record[1] if record is not None else self.data[ident][1]
