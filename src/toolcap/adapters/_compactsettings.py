"""Compaction's settings: ``trigger``, ``target`` and ``keep_recent`` in one measure.

Each is an amount in the measure's unit (``"512KB"``, ``"128k tokens"``, a whole
number) or a share of ``context_window``; the defaults depend on the measure.
"""

from __future__ import annotations

from typing import NamedTuple

from ..core._errors import ConfigError
from ..core._sizes import human_size
from ..core._tokens import human_tokens, parse_amount

__all__ = ["DEFAULT_KEEP_RECENT", "DEFAULT_TRIGGER", "CompactionSettings", "compaction_settings"]

#: The defaults of ``trigger`` (without ``context_window``) and ``keep_recent``, by measure.
DEFAULT_TRIGGER = {"bytes": 512 * 1024, "tokens": 128_000}
DEFAULT_KEEP_RECENT = {"bytes": 64 * 1024, "tokens": 16_000}


def _amount(value: str | int | float, key: str, window: int | None, measure: str) -> int:
    """An amount in ``measure``'s unit (``"200KB"``, ``"50k tokens"``, a whole number)
    or a share of ``context_window`` (``0.5``)."""
    if isinstance(value, bool):
        raise ConfigError(f"{value!r} is not a size or a share of the context window", key=key)
    if isinstance(value, float):
        if window is None:
            raise ConfigError(f"{value!r} is a share of the context window: set context_window",
                              key=key)
        if not 0 < value <= 1:
            raise ConfigError(f"{value!r} is not a share between 0 and 1", key=key)
        return int(window * value)
    return parse_amount(value, key=key, measure=measure)


class CompactionSettings(NamedTuple):
    trigger: int
    target: int
    keep_recent: int


def compaction_settings(
    trigger: str | int | float | None,
    target: str | int | float | None,
    keep_recent: str | int | float | None,
    context_window: str | int | None,
    measure: str,
) -> CompactionSettings:
    window = None if context_window is None else parse_amount(
        context_window, key="context_window", measure=measure)
    if trigger is None:
        high = window // 2 if window is not None else DEFAULT_TRIGGER[measure]
    else:
        high = _amount(trigger, "trigger", window, measure)
    low = high // 2 if target is None else _amount(target, "target", window, measure)
    if low > high:
        shown = human_size if measure == "bytes" else human_tokens
        raise ConfigError(f"target {shown(low)} is above the trigger {shown(high)};"
                          " the target is the low watermark", key="target")
    recent = (DEFAULT_KEEP_RECENT[measure] if keep_recent is None
              else _amount(keep_recent, "keep_recent", window, measure))
    return CompactionSettings(high, low, recent)
