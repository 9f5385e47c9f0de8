"""An upstream MCP server reached over Streamable HTTP (``toolcap proxy --url``).

The SDK's client transport does the HTTP side (sessions, SSE streams, protocol
headers); it runs on an event loop in its own thread, and messages cross into
the relay's threads as JSON lines, so the relay treats both kinds of upstream
alike. A failed exchange (refused, unknown host, TLS, timeout, an HTTP error
status) is explained by ``_http_errors``: one line on stderr and a JSON-RPC
error the client shows, both naming the URL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ._contracts import OnLine, OnLongLine, print_error
from ._io import WriterClosed

__all__ = ["DEFAULT_TIMEOUT", "HttpUpstream"]

# Seconds to connect, and to wait for the next bytes of an answer: a tool may
# run for minutes before its first byte, so reading waits longer by default.
DEFAULT_TIMEOUT = 30.0
DEFAULT_READ_TIMEOUT = 300.0

log = logging.getLogger("toolcap.proxy")


class HttpUpstream:
    """The relay's upstream over the SDK's Streamable HTTP client transport."""

    def __init__(
        self, url: str, headers: dict[str, str], timeout: float | None = None
    ) -> None:
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self._last_report: str | None = None
        self._portal_cm: AbstractContextManager[Any] | None = None
        self._portal: Any = None
        self._transport_cm: AbstractContextManager[Any] | None = None
        self._write: Any = None
        self._closed = False

    @property
    def returncode(self) -> int | None:
        """There is no process; never an exit status."""
        return None

    @property
    def ended(self) -> str:
        """How its end reads in a message."""
        return "closed the connection"

    def describe(self) -> str:
        return self.url

    def run(
        self,
        on_line: OnLine,
        on_closed: Callable[[], None],
        on_long_line: OnLongLine | None = None,
    ) -> None:
        """Connect and start delivering the server's messages as JSON lines."""
        import httpx2
        from anyio.from_thread import start_blocking_portal
        from mcp.client.streamable_http import streamable_http_client

        # The SDK logs why a connection failed; show that on stderr, once.
        sdk_log = logging.getLogger("mcp")
        if not sdk_log.handlers:
            handler = logging.StreamHandler()
            handler.setLevel(logging.WARNING)
            sdk_log.addHandler(handler)
        self._portal_cm = start_blocking_portal()
        portal = self._portal = self._portal_cm.__enter__()
        from ._http_errors import make_client

        connect, read = (
            (DEFAULT_TIMEOUT, DEFAULT_READ_TIMEOUT) if self.timeout is None
            else (self.timeout, self.timeout)
        )
        client = make_client(self.url, (connect, read), self._report, headers=self.headers,
                             timeout=httpx2.Timeout(connect, read=read))
        self._transport_cm = portal.wrap_async_context_manager(
            # No cap on one event: a large result is exactly what the proxy is here to bound.
            streamable_http_client(self.url, http_client=client, max_sse_event_size=None)
        )
        read, self._write = self._transport_cm.__enter__()

        async def pump() -> None:
            try:
                async for item in read:
                    if isinstance(item, Exception):
                        log.error("upstream transport error: %s", item)
                        print_error(f"toolcap proxy: {self.url}: {item}")
                        continue
                    line = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    on_line([line.encode("utf-8")])
            except Exception as exc:  # a transport failure ends the relay, not the process
                log.error("the connection to %s failed: %s", self.url, exc)
                print_error(f"toolcap proxy: the connection to {self.url} failed: {exc}")
            finally:
                on_closed()

        portal.start_task_soon(pump)

    def _report(self, text: str | None) -> None:
        """One stderr line per failure, not one per request while it lasts."""
        if text is not None and text != self._last_report:
            print_error(f"toolcap proxy: {text}")
        self._last_report = text

    def send(self, line: bytes) -> None:
        """Send one message line. Raises WriterClosed if the connection is gone."""
        import mcp_types
        from mcp.shared.message import SessionMessage

        if self._closed or self._portal is None:
            raise WriterClosed
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            log.error("could not forward a malformed message from the client")
            return
        try:
            self._portal.call(self._write.send, SessionMessage(message))
        except Exception as exc:
            raise WriterClosed from exc

    def stop(self, grace: float = 2.0) -> None:
        """Close the session (the transport sends its DELETE) and the event loop."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._transport_cm is not None:
                self._transport_cm.__exit__(None, None, None)
        except Exception as exc:
            log.debug("closing the HTTP session: %s", exc)
        finally:
            if self._portal_cm is not None:
                self._portal_cm.__exit__(None, None, None)
