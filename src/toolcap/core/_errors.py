"""The errors toolcap raises on purpose."""

from __future__ import annotations


def shown(value: object) -> str:
    """``repr(value)`` cut to one short line: a hostile value must not make a huge message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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


class DamagedArtifactError(StoreError):
    """A stored artifact is not what its reference says (truncated, extended or altered).

    ``ref`` names it and ``reason`` says what does not match. The store removes
    it, so that the next put of the same content stores it again.
    """

    def __init__(self, ref: str, reason: str) -> None:
        super().__init__(
            f"artifact {ref} is damaged ({reason}) and was removed; "
            "storing the same content again restores it"
        )
        self.ref = ref
        self.reason = reason
