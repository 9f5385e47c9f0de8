"""Helpers for `toolcap proxy --listen`: the proxy as a real server process, and the
official Python SDK's Streamable HTTP client in front of it."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from anyio.from_thread import BlockingPortal
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from proxy.proxy_helpers import proxy_argv

_SERVING = re.compile(r"serving MCP \(Streamable HTTP\) on (http://\S+)")


class Listener:
    """A `toolcap proxy --listen ... ARGS` process; ``url`` once it serves."""

    def __init__(self, args: list[str], env: dict[str, str], errlog: Path, *,
                 preexec: Callable[[], None] | None = None) -> None:
        self.errlog = errlog
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            proxy_argv(*args),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=preexec,  # a test's own limits, set before the exec
        )
        found: queue.Queue[str | None] = queue.Queue()

        def watch() -> None:
            assert self.proc.stderr is not None
            with errlog.open("a", encoding="utf-8") as log:
                for line in self.proc.stderr:
                    log.write(line)
                    log.flush()
                    self.lines.append(line)
                    match = _SERVING.search(line)
                    if match:
                        found.put(match.group(1))
            found.put(None)

        self._watcher = threading.Thread(target=watch, daemon=True)
        self._watcher.start()
        url = found.get(timeout=60)
        if url is None:
            raise RuntimeError("the proxy did not start serving: " + "".join(self.lines))
        self.url: str = url

    def stop(self) -> int:
        """SIGTERM the proxy and return its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)

    def said(self) -> list[str]:
        """Stop the proxy; every line it wrote on stderr (read to the end)."""
        self.stop()
        self._watcher.join(30)
        return [line.rstrip("\n") for line in self.lines]

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def listen_env(base: dict[str, str], **extra: str) -> dict[str, str]:
    env = dict(base)
    env.update(extra)
    return env


class HttpClient:
    """A ClientSession of the official SDK over Streamable HTTP, driven synchronously."""

    def __init__(
        self,
        portal: BlockingPortal,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        stateless: bool = False,
    ):
        self.stateless = stateless  # the 2026-07-28 revision: server/discover, no session
        self.portal = portal
        self.url = url
        self.headers = headers or {}
        self.session: ClientSession | None = None
        self._cm: Any = None

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[ClientSession]:
        client = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(60.0))
        async with client, streamable_http_client(
            self.url, http_client=client, max_sse_event_size=None
        ) as (read, write), ClientSession(read, write) as session:
            if self.stateless:
                self.discovered = await session.discover()
            else:
                self.init = await session.initialize()
            yield session

    def __enter__(self) -> HttpClient:
        self._cm = self.portal.wrap_async_context_manager(self._connect())
        self.session = self._cm.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(*exc)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        session = self.session
        assert session is not None

        async def go() -> CallToolResult:
            return await session.call_tool(name, arguments or {})

        return self.portal.call(go)


def raw(
    url: str, method: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> httpx2.Response:
    """One plain HTTP request (for what an SDK client would never send)."""
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client(timeout=30.0) as client:
        return client.request(method, url, content=body, headers={**base, **(headers or {})})


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
