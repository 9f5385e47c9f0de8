"""Helpers for the proxy tests: a real `toolcap proxy` process, the official SDK's
ClientSession over stdio in front of it, and real upstream servers behind it.

Each session runs in a blocking portal (an event loop in a thread), so tests are
plain functions and one proxy + upstream can serve a whole module.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import select
import ssl
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio
from anyio.from_thread import BlockingPortal
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_types import (
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    Root,
    TextContent,
)

from helpers import REF

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
BIGSERVER = SERVERS / "bigserver.py"
NPM_BIN = ROOT / "tests" / "npm" / "node_modules" / ".bin"

# The proxy is started the way a client configuration would: as a command.
PROXY = [
    sys.executable,
    "-c",
    "import sys; from toolcap.cli import main; sys.exit(main())",
    "proxy",
]


def proxy_argv(*args: str) -> list[str]:
    """The full command line of ``toolcap proxy ARGS``."""
    return [*PROXY, *args]


class StubHandler(http.server.BaseHTTPRequestHandler):
    """A hand-made upstream's request handler: HTTP/1.1, quiet, and two helpers."""

    protocol_version = "HTTP/1.1"

    def message(self) -> Any:
        """The request's body, as JSON."""
        return json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))

    def answer(self, status: int, body: bytes = b"", content_type: str | None = None,
               **headers: str) -> None:
        """Send a whole response (``headers`` spelled with ``_`` for ``-``)."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("content-type", content_type)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def loopback_http(
    handler: type[http.server.BaseHTTPRequestHandler], context: ssl.SSLContext | None = None
) -> Iterator[int]:
    """A threading HTTP server of ``handler`` on 127.0.0.1 (over TLS with ``context``),
    for as long as the block runs; yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def wait_pid_gone(pid: int, timeout: float = 15.0) -> bool:
    """Wait for process ``pid`` (not necessarily our child) to exit, on its pidfd."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def parent_pid(pid: int) -> int:
    """The parent of ``pid``, from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


class Client:
    """A ClientSession to ``toolcap proxy`` over stdio, driven from synchronous tests."""

    def __init__(self, portal: BlockingPortal, argv: list[str], env: dict[str, str], errlog: Path):
        self.portal = portal
        self.argv = argv
        self.env = env
        self.errlog_path = errlog
        self.logs: list[Any] = []
        self.log_arrived: anyio.Event | None = None  # set by the next log message
        self.notified: list[str] = []  # methods of the notifications the session surfaced
        self.notice_arrived: anyio.Event | None = None
        self.sampled: list[str] = []
        self.elicited: list[str] = []
        self.session: ClientSession | None = None
        self._cm: Any = None

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(command=self.argv[0], args=self.argv[1:], env=self.env)
        with self.errlog_path.open("a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):

                async def sampling(context: Any, params: Any) -> CreateMessageResult:
                    self.sampled.append(params.messages[0].content.text)
                    return CreateMessageResult(
                        role="assistant", content=TextContent(text="forty-two"), model="test-model"
                    )

                async def elicit(context: Any, params: Any) -> ElicitResult:
                    self.elicited.append(params.message)
                    return ElicitResult(action="accept", content={"colour": "teal"})

                async def roots(context: Any) -> ListRootsResult:
                    return ListRootsResult(roots=[Root(uri="file:///tmp/root-a", name="a")])

                async def logging_cb(params: Any) -> None:
                    self.logs.append(params.data)
                    if self.log_arrived is not None:
                        self.log_arrived.set()

                async def on_message(message: Any) -> None:
                    method = getattr(message, "method", None)
                    if isinstance(method, str):
                        self.notified.append(method)
                        if self.notice_arrived is not None:
                            self.notice_arrived.set()

                session = ClientSession(
                    read,
                    write,
                    sampling_callback=sampling,
                    list_roots_callback=roots,
                    elicitation_callback=elicit,
                    logging_callback=logging_cb,
                    message_handler=on_message,
                )
                async with session:
                    self.init = await session.initialize()
                    yield session

    def __enter__(self) -> Client:
        self._cm = self.portal.wrap_async_context_manager(self._connect())
        self.session = self._cm.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(*exc)

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run an async callable on the session's loop."""
        return self.portal.call(fn, *args)

    def call(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> CallToolResult:
        assert self.session is not None
        session = self.session

        async def go() -> CallToolResult:
            return await session.call_tool(name, arguments or {}, **kw)

        return self.portal.call(go)

    def stderr(self) -> str:
        return self.errlog_path.read_text(encoding="utf-8", errors="replace")

    def stderr_reaching(self, needle: str, count: int, timeout: float = 30.0) -> str:
        """stderr once it holds ``needle`` ``count`` times (or at the deadline): what a
        proxy's upstream says on stderr is relayed by a thread of its own, so it may
        arrive after the reply that follows it."""
        deadline = time.monotonic() + timeout
        while (text := self.stderr()).count(needle) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return text


def text_of(result: CallToolResult) -> list[str]:
    """The text of each block (empty for non-text blocks)."""
    return [getattr(block, "text", "") or "" for block in result.content]


def json_text_size(text: str) -> int:
    """Bytes of a text field's JSON string as the proxy serializes it."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def base_env(artifacts: Path, config: Path) -> dict[str, str]:
    env = {
        "TOOLCAP_ARTIFACTS": str(artifacts),
        "TOOLCAP_CONFIG": str(config),
        "PYTHONUNBUFFERED": "1",
    }
    for key in ("PATH", "HOME", "VIRTUAL_ENV", "PYTHONPATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def open_store(artifacts: Path) -> Any:
    """The artifact store the proxy wrote to, opened from the test process."""
    from toolcap.store import open_store as _open

    return _open(str(artifacts))


__all__ = [
    "BIGSERVER",
    "NPM_BIN",
    "REF",
    "Client",
    "RawProxy",
    "anyio",
    "base_env",
    "json_text_size",
    "load_bigserver",
    "loopback_http",
    "open_store",
    "parent_pid",
    "proxy_argv",
    "text_of",
    "wait_pid_gone",
    "write_config",
]


def load_bigserver() -> Any:
    """The test server's module, for its deterministic payload functions."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("toolcap_test_bigserver", BIGSERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first, so that its annotations resolve (pydantic looks the module up).
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


class RawProxy:
    """`toolcap proxy` driven with raw JSON-RPC lines, for what a session hides (exit codes)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        import queue
        import subprocess
        import threading

        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self._lines.put(line)
            self._lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def response(self) -> dict[str, Any]:
        """The next response the proxy writes (what else it writes is skipped)."""
        while True:
            line = self._lines.get(timeout=60)
            assert line is not None, "the proxy closed its stdout"
            message = json.loads(line)
            if "id" in message and "method" not in message:
                return dict(message)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its response (skipping notifications)."""
        response = self.request_or_eof(method, params)
        if response is None:
            assert self.proc.stderr is not None
            code = self.proc.wait(timeout=30)
            said = self.proc.stderr.read().decode("utf-8", "replace")[-2000:]
            raise AssertionError(f"the proxy closed its stdout (exit {code}); stderr: {said}")
        return response

    def request_or_eof(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Send a request; its response, or None if the proxy closed its stdout first."""
        self._next_id += 1
        # If it is gone already, what it wrote before is still to be read.
        with contextlib.suppress(BrokenPipeError):
            self.send(
                {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}}
            )
        while True:
            line = self._lines.get(timeout=30)
            if line is None:
                return None
            message = json.loads(line)
            if message.get("id") == self._next_id and "method" not in message:
                return dict(message)

    def initialize(self) -> dict[str, Any]:
        response = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw-test-client", "version": "0"},
            },
        )
        if "result" in response:
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def stderr_text(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")
