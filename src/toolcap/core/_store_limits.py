"""The artifact store's limits (the ``[store]`` table): one type, one validation.

Configuration files, ``open_store`` and the store constructors all hold the same
:class:`StoreLimits`, so a limit is checked the same way wherever it comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass, fields

from ._errors import ConfigError, shown
from ._sizes import MIN_LIMIT, UNLIMITED, Limit, parse_limit
from ._strategy import CutPolicy, Snap

__all__ = ["PARTIAL_CUT", "PARTIAL_SNAP", "StoreLimits"]

#: How an artifact over the largest size is cut, by the one cut engine: half head,
#: half tail (the model reads either end back), each end moved to a line break
#: within 4 KB whatever the size (a stored part is large: a quarter would be far).
PARTIAL_SNAP = Snap(window=4096)
PARTIAL_CUT = CutPolicy("head_tail", 0.5, PARTIAL_SNAP)

_KB = 1024
_MB = 1024 * _KB
_GB = 1024 * _MB


@dataclass(frozen=True)
class StoreLimits:
    """Bounds on the artifact store; ``None`` means unlimited.

    ``max_artifact_size``: bytes; an original over it is stored as its head and
    tail and marked partial. ``max_total_size``: bytes; when a write takes the
    store over it, the least recently read artifacts are evicted.
    ``max_age_days``: artifacts not read for this long are removed by ``gc``.

    Sizes may be given as text (``"256MB"``, ``"unlimited"``) and are checked as
    every limit is: at least 1 KB, ``0`` refused. ``minimum`` lowers that floor
    explicitly, for tests that exercise the cut and eviction on a few bytes
    (``StoreLimits(max_artifact_size=100, minimum=1)``); it is not stored.
    """

    max_artifact_size: Limit = 256 * _MB
    max_total_size: Limit = 2 * _GB
    max_age_days: float | None = 30.0
    minimum: InitVar[int] = MIN_LIMIT

    def __post_init__(self, minimum: int) -> None:
        for key in ("max_artifact_size", "max_total_size"):
            object.__setattr__(self, key, _size(getattr(self, key), f"store.{key}", minimum))
        object.__setattr__(self, "max_age_days", _days(self.max_age_days, "store.max_age_days"))

    @classmethod
    def from_mapping(cls, table: object, *, file: str | None = None) -> StoreLimits:
        """Validate a ``[store]`` table as TOML gives it; unknown keys are errors."""
        if not isinstance(table, Mapping):
            raise ConfigError("must be a table", key="store", file=file)
        known = {f.name for f in fields(cls)}
        values: dict[str, object] = {}
        for key, value in table.items():
            if key not in known:
                raise ConfigError(
                    f"unknown key {shown(key)} (known keys: {', '.join(sorted(known))})",
                    key=f"store.{key}", file=file,
                )
            values[key] = value
        try:
            return cls(**values)  # type: ignore[arg-type]
        except ConfigError as error:
            if file is None:
                raise
            located = ConfigError(str(error), file=file)
            located.key = error.key
            raise located from None

    def split(self) -> tuple[int, int]:
        """Head and tail budgets of an artifact over ``max_artifact_size``."""
        assert self.max_artifact_size is not None
        return PARTIAL_CUT.split(self.max_artifact_size)


def _size(value: object, key: str, minimum: int) -> Limit:
    if value is None or (isinstance(value, str) and value.strip().lower() == UNLIMITED):
        return None
    if minimum >= MIN_LIMIT:
        return parse_limit(value, key=key)  # type: ignore[arg-type]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"expected a positive byte count, got {shown(value)}", key=key)
    if value < minimum:
        raise ConfigError(f"limit {value!r} is below the minimum of {minimum}", key=key)
    return value


def _days(value: object, key: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == UNLIMITED):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(
            f'expected a positive number of days or "unlimited", got {shown(value)}', key=key
        )
    return float(value)
