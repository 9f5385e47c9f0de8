"""What the relay and its two sides agree on: the upstream, the hooks, small helpers."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..core._errors import ToolNameConflict
from ..core._json import dumps as _json_dumps
from ._long import LongMessage

__all__ = [
    "PROXY_ERROR",
    "ClientEnds", "ClientReader", "ClientWriter", "Hooks", "OnLine", "OnLongLine",
    "ToolNameConflict", "Upstream", "dumps", "guarded", "print_error",
]

log = logging.getLogger("toolcap.proxy")
T = TypeVar("T")
#: Takes one message line, as a one-item list it empties (see Upstream.run).
OnLine = Callable[[list[bytes | bytearray]], None]
OnLongLine = Callable[[LongMessage], None]


#: The JSON-RPC error code of a failure of the proxy itself (implementation-defined range).
PROXY_ERROR = -32000


def dumps(message: Any) -> bytes:
    """Serialize compactly as UTF-8 (lone surrogates escaped, so always valid UTF-8)."""
    return _json_dumps(message).encode("utf-8")


class ClientReader(Protocol):
    """The client's side of the relay, read: stdin, or an HTTP session's queue."""

    def readline(self) -> bytes | None:
        """The next message line; None when the client has gone."""


class ClientWriter(Protocol):
    """The client's side of the relay, written: stdout, or an HTTP session's streams."""

    def write_line(self, data: bytes) -> None:
        """Send one message line; raise WriterClosed when the client has gone."""

    def gone(self) -> bool:
        """Whether the client has gone (nothing reads what is written any more): the
        relay ends at once if a write to the upstream is stuck meanwhile. A client
        that only closed its side of sending still reads its answers: not gone."""


#: The relay's client side when it is not stdin/stdout (an HTTP session, _sessions.py).
ClientEnds = tuple[ClientReader, ClientWriter]


class Upstream(Protocol):
    """The server side of the relay: a subprocess over stdio or a URL."""

    def run(
        self,
        on_line: OnLine,
        on_closed: Callable[[], None],
        on_long_line: OnLongLine | None = None,
    ) -> None:
        """Deliver each message line, as a one-item list the callee empties (so that
        it holds the only reference to a big line); lines over the upstream's
        maximum go to ``on_long_line`` instead, never held whole."""

    def send(self, line: bytes) -> None: ...

    def send_waited(self) -> float:
        """Seconds the line being sent has waited for the server to read it (0: none)."""

    def stop(self, grace: float = 2.0) -> None: ...

    def describe(self) -> str: ...

    @property
    def ended(self) -> str:
        """How its end reads in a message: "exited", "closed the connection"."""

    @property
    def returncode(self) -> int | None: ...


class Hooks(Protocol):
    """What the relay asks of the bounding layer. ``None`` means "unchanged"."""

    read_artifact_name: str | None

    def fits(self, tool: str | None, size: int) -> bool:
        """Whether a message of ``size`` bytes is within every limit of ``tool``
        (``None``: of every tool), so that its result needs no bounding."""

    def tool_result(self, tool: str, call_id: Any, result: dict[str, Any]) -> dict[str, Any] | None:
        """Bound one tools/call result."""

    def resource_result(
        self, uri: str, call_id: Any, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Bound one resources/read result."""

    def prompt_result(
        self, name: str, call_id: Any, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Bound one prompts/get result."""

    def has_output_schema(self, tool: str) -> bool:
        """Whether the client was shown an output schema for ``tool``."""

    def listed_tool(self, tool: str) -> bool:
        """Whether a tools/list answer that passed the relay has shown ``tool``."""


    def tools_list(self, result: dict[str, Any], first_page: bool) -> dict[str, Any]:
        """Rewrite a tools/list result; may raise ToolNameConflict."""

    def read_artifact(self, call_id: Any, arguments: Any) -> dict[str, Any]:
        """Answer a call of the proxy's own tool with a tools/call result."""

    def upstream_read(self, arguments: Any) -> str | None:
        """The upstream tool a call of the proxy's own tool goes to instead (an upstream
        toolcap proxy's reader, for a reference this proxy does not hold), or None."""

    def error_text(self, text: str) -> str:
        """Bound the text of an error the proxy forwards or makes."""

    def error_answer(self, message: dict[str, Any], size: int) -> dict[str, Any]:
        """An error answer of ``size`` bytes from the upstream, as it goes on (itself
        when unchanged)."""

    def written(self, tool: str, call_id: Any, frame: bytes, *, changed: bool) -> None:
        """Note the frame of a tool result as written to the client (diagnostics)."""

    def open_writer(self, tool: str | None) -> Any:
        """A writer of the artifact store (``write``, ``commit``, ``abort``) for a
        message too long to read; raises StoreError when there is none."""


def guarded(handle: Callable[[T], None]) -> Callable[[T], None]:
    """``handle``, but a bug in it costs one message, never the relay."""

    def run(item: T) -> None:
        try:
            handle(item)
        except Exception as exc:
            log.exception("failed to relay a message")
            print_error(f"toolcap proxy: failed to relay a message ({type(exc).__name__})")

    return run


def print_error(message: str) -> None:
    """Write one line to stderr."""
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()
