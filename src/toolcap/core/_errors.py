"""Every error toolcap raises on purpose, in one place.

Each class is also importable from the module that raises it, under the same
name, so callers import it from where it comes from or from here alike.

Met by a caller of the library (public):

* :class:`ConfigError` (a ``ValueError``): a size, limit, marker template or
  configuration value that cannot be accepted; the message is one line.
* :class:`StoreError`: an artifact store could not do what was asked; its
  kinds :class:`InvalidReferenceError`, :class:`ArtifactNotFoundError` and
  :class:`DamagedArtifactError`.
* :class:`RepairError` (a ``ValueError``): a saved conversation that cannot be read.

Caught inside toolcap, each turned into a one-line message, an exit status or an
error result (internal):

* :class:`CommandError`: a command-line failure, with its exit status.
* :class:`CommandNotStarted` (an ``OSError``): ``toolcap run`` could not start a command.
* :class:`UpstreamStartError`: the proxy could not start its MCP server.
* :class:`ToolNameConflict`: the MCP server already has the proxy's own tool's name.
* :class:`WriterClosed`: the reader of a pipe the proxy writes to has gone away.
* :class:`JSONSpanError` (a ``ValueError``): text that is not JSON, with where.
* :class:`PlacedError` (a :class:`RepairError`): a session file that cannot be read,
  at a byte offset whose line and column the reader of the file then names.
* :class:`JsonSyntaxError` (a ``ValueError``): an MCP client's configuration file that
  is not JSON (nor JSONC), with its line and column.
* :class:`EventTooLarge` (a ``ValueError``): a message from an HTTP upstream grew past
  ``max_line_size`` before it ended.
* :class:`MessageCutShort`: a message over ``max_line_size`` whose source (an HTTP
  answer) ended before it did, so that nothing of it is kept.
* :class:`NotJson` (a ``ValueError``): a line from an MCP server that is not JSON.
"""

from __future__ import annotations

__all__ = [
    "ArtifactNotFoundError",
    "CommandError",
    "CommandNotStarted",
    "ConfigError",
    "DamagedArtifactError",
    "EventTooLarge",
    "InvalidReferenceError",
    "JSONSpanError",
    "JsonSyntaxError",
    "MessageCutShort",
    "NotJson",
    "PlacedError",
    "RepairError",
    "StoreError",
    "ToolNameConflict",
    "UpstreamStartError",
    "WriterClosed",
]


# -- public ------------------------------------------------------------------------


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


class InvalidReferenceError(StoreError):
    """A reference that is not well-formed; it is refused without touching the store."""


class ArtifactNotFoundError(StoreError):
    """A well-formed reference that names no artifact in this store (or several)."""


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


class RepairError(ValueError):
    """A conversation file that cannot be read; the message names where."""


# -- internal ----------------------------------------------------------------------


class PlacedError(RepairError):
    """A session file that cannot be read at byte ``offset``; whoever holds the file
    names the line (and, with ``column``, the column)."""

    def __init__(self, message: str, offset: int, *, column: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.column = column


class CommandError(Exception):
    """An expected failure: printed as one line, exit with ``status``."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


class CommandNotStarted(OSError):
    """The command could not be started (not found, not executable)."""


class UpstreamStartError(Exception):
    """The upstream command could not be started; the message is one line."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class ToolNameConflict(Exception):
    """The upstream already has a tool with the name of the proxy's own tool."""


class WriterClosed(Exception):
    """The other end of a pipe we write to has gone away."""


class EventTooLarge(ValueError):
    """A message from an HTTP upstream (a body, an event, a line) grew past its bound."""


class MessageCutShort(Exception):
    """The source of a long message ended (a dropped connection) before the message did."""


class NotJson(ValueError):
    """A line from an MCP server that is not JSON; its message says why."""


class JSONSpanError(ValueError):
    """Text that is not JSON; ``index`` is where it went wrong (a character index)."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class JsonSyntaxError(ValueError):
    """Text that is not JSON (nor JSONC); ``line`` and ``column`` count from 1."""

    def __init__(self, message: str, text: str, at: int) -> None:
        self.line = text.count("\n", 0, at) + 1
        self.column = at - (text.rfind("\n", 0, at) + 1) + 1
        super().__init__(f"{message} at line {self.line} column {self.column}")
