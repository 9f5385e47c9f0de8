"""Fixtures for the adapter tests: a recording HTTP server on loopback and a policy.

The server stands in for a model provider: the real SDK clients are pointed at it
by ``base_url``; it keeps every request body exactly as received and answers
each request with the next canned JSON reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from toolcap import Config, Policy
from toolcap.store import MemoryStore


@dataclass
class Recorded:
    """One request as it arrived: its path and its body, byte for byte."""

    path: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class RecordingServer:
    """What the handler reads and writes; the test reads ``requests``."""

    url: str
    replies: list[Any] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(state: RecordingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with state.lock:
                state.requests.append(Recorded(self.path, body))
                reply = state.replies.pop(0) if state.replies else {"error": "no reply left"}
            data = json.dumps(reply).encode("utf-8")
            self.send_response(200 if "error" not in reply else 500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    return Handler


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    """A provider stand-in on 127.0.0.1 (an ephemeral port), stopped after the test."""
    state = RecordingServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def store() -> MemoryStore:
    """An artifact store in memory, so a test can read back what was kept."""
    return MemoryStore()


@pytest.fixture
def policy(store: MemoryStore) -> Policy:
    """The default configuration, keeping originals in ``store``, notices off."""
    return Policy(Config(), sink=store, notices=False)
