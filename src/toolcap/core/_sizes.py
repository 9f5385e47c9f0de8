"""Byte sizes as people write them, and as toolcap prints them."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from ._errors import ConfigError

__all__ = ["MIN_LIMIT", "UNLIMITED", "Limit", "human_size", "parse_limit", "parse_size"]

#: A limit is a byte count, or ``None`` for no limit (written ``"unlimited"``).
Limit = int | None

#: The spelling of "no limit" in configuration and on the command line.
UNLIMITED = "unlimited"

#: The smallest limit a configuration may set: the marker must fit with room to spare.
MIN_LIMIT = 1024

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}
_SIZE = re.compile(r"\s*(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(?P<unit>[a-zA-Z]*)\s*\Z")
# A size beyond this is a typo, not a budget; it also keeps Decimal arithmetic small.
_MAX_SIZE = 1 << 62


def parse_size(text: str | int, *, key: str | None = None, file: str | None = None) -> int:
    """Parse ``"16384"``, ``"32KB"``, ``"1.5 MiB"`` … into a whole number of bytes.

    Units are binary and case-insensitive (``K``/``KB``/``KiB`` = 1024, ``M…`` = 1024²,
    ``G…`` = 1024³, ``B`` = 1); decimals are rounded down to whole bytes.
    Raises :class:`ConfigError` naming the value (and ``key``/``file`` when given).
    """
    if isinstance(text, bool):
        raise ConfigError(f"expected a size such as '32KB', got {text!r}", key=key, file=file)
    if isinstance(text, int):
        if text < 0:
            raise ConfigError(f"a size cannot be negative, got {text}", key=key, file=file)
        if text > _MAX_SIZE:
            raise ConfigError(f"size {text} is too large", key=key, file=file)
        return text
    if not isinstance(text, str):
        raise ConfigError(f"expected a size such as '32KB', got {text!r}", key=key, file=file)
    match = _SIZE.match(text)
    if match is None and "token" in text.lower():
        raise ConfigError(f"invalid size {text[:64]!r}: this limit is in bytes (e.g. '32KB');"
                          " tokens are for context_window, reserve and compaction",
                          key=key, file=file)
    if match is None:
        hint = "sizes cannot be negative" if text.strip().startswith("-") else (
            "write a number with an optional unit: B, KB, MB or GB (e.g. '32KB')"
        )
        raise ConfigError(f"invalid size {text!r}: {hint}", key=key, file=file)
    unit = match["unit"].lower()
    if unit not in _UNITS:
        raise ConfigError(
            f"invalid size {text!r}: unknown unit {match['unit']!r} (use B, KB, MB or GB)",
            key=key,
            file=file,
        )
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        raise ConfigError(f"invalid size {text!r}", key=key, file=file) from None
    if number > _MAX_SIZE:
        raise ConfigError(f"size {text!r} is too large", key=key, file=file)
    size = int(number * _UNITS[unit])
    if size > _MAX_SIZE:
        raise ConfigError(f"size {text!r} is too large", key=key, file=file)
    return size


def parse_limit(
    value: str | int | None, *, key: str | None = None, file: str | None = None
) -> Limit:
    """Parse a limit: a size of at least 1 KB, or ``"unlimited"`` / ``None`` for none.

    ``0`` is refused with a hint to write ``"unlimited"``: a zero limit would reduce
    every response to a bare marker.
    """
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == UNLIMITED:
        return None
    size = parse_size(value, key=key, file=file)
    if size == 0:
        raise ConfigError(
            f"a limit of {value!r} would drop every response; write \"unlimited\" for no limit",
            key=key,
            file=file,
        )
    if size < MIN_LIMIT:
        raise ConfigError(
            f"limit {value!r} is below the 1KB minimum (the marker alone needs room)",
            key=key,
            file=file,
        )
    return size


def human_size(n: int) -> str:
    """Render a byte count: ``"512 B"``, else one truncated decimal of KB, MB or GB.

    >>> human_size(637952), human_size(1048575), human_size(10900000)
    ('623.0 KB', '1023.9 KB', '10.3 MB')

    Only whole numbers of bytes: anything else (a float, a bool) raises
    :class:`TypeError`, rather than print a malformed size.
    """
    if type(n) is not int and (not isinstance(n, int) or isinstance(n, bool)):
        raise TypeError(f"human_size takes a whole number of bytes (an int), got {n!r}")
    if n < 1024:
        return f"{n} B"
    # Branches, not a loop over units: every marker prints two sizes.
    if n >= 1 << 30:
        tenths, unit = n * 10 >> 30, "GB"
    elif n >= 1 << 20:
        tenths, unit = n * 10 >> 20, "MB"
    else:
        tenths, unit = n * 10 >> 10, "KB"
    return f"{tenths // 10}.{tenths % 10} {unit}"
