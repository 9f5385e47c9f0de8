"""The records a store keeps and reports: per artifact, per search, per collection.

The reference format itself (making, shortening and parsing references) is in
:mod:`toolcap.core._refs`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from toolcap.core._errors import ArtifactNotFoundError, StoreError
from toolcap.core._jsonrecord import JsonIndex, parse_index
from toolcap.core._refs import PREFIX, parse_ref
from toolcap.store._lineindex import Marks, parse_marks

__all__ = [
    "ArtifactInfo",
    "ArtifactNotFoundError",
    "GcReport",
    "GrepMatch",
    "GrepResult",
]



@dataclass(frozen=True)
class ArtifactInfo:
    """The metadata record kept per artifact. It never holds any of the content.

    ``bytes`` is what is stored; ``original_bytes`` what was put. They differ only
    when the original was over the store's largest-artifact limit: then
    ``partial`` is true and the stored object is the first ``head_bytes`` of the
    original followed by its last ``bytes - head_bytes`` bytes, and every read
    addresses that stored object. ``lines`` counts the lines of the original.
    Times are seconds since the epoch. ``location`` is the plain file path (local
    store) or URL (fsspec store) of the stored bytes. ``stored_sha256`` is the
    SHA-256 of the stored bytes of a partial artifact (a complete one's is
    ``sha256``), so that a whole read can check them. ``line_marks`` is the
    sparse line index of the stored bytes (see :mod:`toolcap.store._lineindex`),
    ``json_index`` the structural index of a JSON original (see
    :mod:`toolcap.core._jsonindex`): both persisted, neither part of :meth:`to_dict`.
    """

    ref: str
    sha256: str
    bytes: int
    original_bytes: int
    lines: int
    created: float
    last_read: float
    tool: str | None = None
    partial: bool = False
    head_bytes: int | None = None
    location: str | None = None
    stored_sha256: str | None = None
    line_marks: Marks = field(default=(), repr=False, compare=False)
    json_index: JsonIndex | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        """The hex digits of the reference."""
        return self.ref[len(PREFIX) :]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field but the indexes."""
        data = asdict(replace(self, json_index=None))
        del data["line_marks"], data["json_index"]
        return data

    def record(self) -> dict[str, Any]:
        """The persisted form: every field except the derived location."""
        data = asdict(replace(self, json_index=None))  # asdict would copy it deeply
        del data["location"]
        if data["stored_sha256"] is None:
            del data["stored_sha256"]  # complete artifacts: their records stay as they were
        if self.line_marks:
            data["line_marks"] = [list(mark) for mark in self.line_marks]
        else:
            del data["line_marks"]  # small artifacts need none
        if self.json_index is not None:
            data["json_index"] = self.json_index.record()
        else:
            del data["json_index"]
        return data

    @classmethod
    def from_record(cls, data: dict[str, Any], *, location: str | None = None) -> ArtifactInfo:
        """Rebuild from :meth:`record` output; raises StoreError when it is damaged."""
        try:
            info = cls(
                ref=str(data["ref"]),
                sha256=str(data["sha256"]),
                bytes=int(data["bytes"]),
                original_bytes=int(data["original_bytes"]),
                lines=int(data["lines"]),
                created=float(data["created"]),
                last_read=float(data["last_read"]),
                tool=None if data.get("tool") is None else str(data["tool"]),
                partial=bool(data.get("partial", False)),
                head_bytes=None if data.get("head_bytes") is None else int(data["head_bytes"]),
                location=location,
                stored_sha256=(
                    None if data.get("stored_sha256") is None else str(data["stored_sha256"])
                ),
            )
            info = replace(info, line_marks=parse_marks(data.get("line_marks"), info.bytes),
                           json_index=_json_index(data.get("json_index"), info))
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"damaged artifact metadata ({exc.__class__.__name__})") from None
        parse_ref(info.ref)
        return info


def _json_index(value: object, info: ArtifactInfo) -> JsonIndex | None:
    """The record's JSON index if it has a sound one (a partial artifact has none)."""
    if value is None or info.partial:
        return None
    return parse_index(value, info.bytes)


@dataclass(frozen=True)
class GrepMatch:
    """A matching line, or a window of a long one, with its context lines.

    ``line`` is 1-based. ``offsets`` are the byte offsets in the artifact of the
    matches that begin in ``text`` (a read by byte range can start there);
    ``start`` is the byte offset of ``text``'s first byte. A line longer than the
    search's window is shown as windows around its matches, marked ``[...]``
    where cut; context lines show a line's start.
    """

    line: int
    text: str
    before: tuple[tuple[int, str], ...] = ()
    after: tuple[tuple[int, str], ...] = ()
    offsets: tuple[int, ...] = ()
    start: int = 0


@dataclass(frozen=True)
class GrepResult:
    """Matches in line order; ``truncated`` when more matches exist than were returned."""

    matches: tuple[GrepMatch, ...]
    truncated: bool


@dataclass
class GcReport:
    """What a garbage collection removed (or, with ``dry_run``, would remove)."""

    dry_run: bool
    evicted: list[tuple[str, int, str]] = field(default_factory=list)  # (ref, bytes, reason)
    kept: int = 0
    total_before: int = 0
    total_after: int = 0
    stale_temporaries: int = 0
    over_limit: bool = False  # still over max_total_size: the grace period protected the rest

    @property
    def freed(self) -> int:
        """Bytes of artifacts evicted."""
        return sum(size for _, size, _ in self.evicted)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the report."""
        return {
            "dry_run": self.dry_run,
            "evicted": [{"ref": r, "bytes": b, "reason": why} for r, b, why in self.evicted],
            "kept": self.kept,
            "freed": self.freed,
            "total_before": self.total_before,
            "total_after": self.total_after,
            "stale_temporaries": self.stale_temporaries,
            "over_limit": self.over_limit,
        }
