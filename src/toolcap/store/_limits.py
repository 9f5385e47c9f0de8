"""Store limits (largest artifact, total size, age) and the head/tail cut of big artifacts."""

from __future__ import annotations

from dataclasses import dataclass

from toolcap.core._errors import ConfigError
from toolcap.core._sizes import parse_limit

__all__ = ["GRACE_SECONDS", "SNAP_WINDOW", "Limits", "snap_head", "snap_tail"]

#: Nothing read or written more recently than this is ever evicted.
GRACE_SECONDS = 3600.0
#: How far back (head) or forward (tail) a cut may move to land on a line break.
SNAP_WINDOW = 4096


def _size(value: int | str | None, key: str) -> int | None:
    """A limit in bytes from an int, a size string or ``"unlimited"``/``None``.

    An int is taken as is (tests use tiny limits); text goes through the shared
    parser, so that it is spelled and checked as everywhere else.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"invalid size {value!r}", key=key)
    if isinstance(value, int):
        if value <= 0:
            raise ConfigError(f"invalid size {value!r}: use \"unlimited\" for no limit", key=key)
        return value
    return parse_limit(value, key=key)


@dataclass(frozen=True)
class Limits:
    """The three store limits in bytes and days; ``None`` is unlimited."""

    max_artifact_size: int | None
    max_total_size: int | None
    max_age_days: float | None

    DEFAULT_ARTIFACT = "256MB"
    DEFAULT_TOTAL = "2GB"
    DEFAULT_AGE_DAYS = 30.0

    @classmethod
    def build(
        cls,
        max_artifact_size: int | str | None,
        max_total_size: int | str | None,
        max_age_days: float | str | None,
    ) -> Limits:
        """Validate and normalise constructor arguments (sizes may be strings)."""
        age: float | None
        if max_age_days is None or max_age_days == "unlimited":
            age = None
        else:
            try:
                age = float(max_age_days)
            except (TypeError, ValueError):
                raise ConfigError(f"invalid number of days {max_age_days!r}",
                                  key="store.max_age_days") from None
            if age < 0:
                raise ConfigError(f"invalid number of days {max_age_days!r}",
                                  key="store.max_age_days")
        return cls(
            _size(max_artifact_size, "store.max_artifact_size"),
            _size(max_total_size, "store.max_total_size"),
            age,
        )

    def split(self) -> tuple[int, int]:
        """Head and tail budgets of an artifact over ``max_artifact_size``."""
        assert self.max_artifact_size is not None
        head = self.max_artifact_size // 2
        return head, self.max_artifact_size - head


def snap_head(data: bytes, end: int) -> int:
    """Where to end a head of ``data[:end]``: after a line break if one is near ``end``."""
    cut = data.rfind(b"\n", max(0, end - SNAP_WINDOW), end)
    return end if cut < 0 else cut + 1


def snap_tail(window: bytes) -> int:
    """How many leading bytes of a tail to drop so that it starts on a whole line.

    ``window`` is the tail's first :data:`SNAP_WINDOW` bytes (or all of it).
    """
    cut = window.find(b"\n", 0, SNAP_WINDOW)
    return 0 if cut < 0 or cut + 1 >= len(window) else cut + 1
