"""The errors toolcap raises on purpose."""

from __future__ import annotations


class ConfigError(ValueError):
    """A size, limit or configuration value that toolcap cannot accept.

    The message names the offending value and, when known, the key and the
    file it came from, so that it can be shown to a user as one line.
    """

    def __init__(self, message: str, *, key: str | None = None, file: str | None = None) -> None:
        where = []
        if file:
            where.append(str(file))
        if key:
            where.append(key)
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.key = key
        self.file = file


class StoreError(RuntimeError):
    """An artifact store could not do what was asked (bad reference, I/O failure)."""
