"""`toolcap proxy --url`: an answer over max_line_size is kept like a stdio line that long
(streamed to the store, never held, its call answered with a note naming the artifact,
read back with read_artifact), as a JSON body or as one SSE event in many chunks; one
cut short is an error naming the URL, and nothing of it is kept. Hand-made upstreams on
loopback send exactly the bytes each case needs."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proxy.proxy_helpers import (
    REF,
    RawProxy,
    StubHandler,
    base_env,
    loopback_http,
    open_store,
    proxy_argv,
    write_config,
)

MB = 1 << 20
CONFIG = '[tools."*"]\nsize_threshold = "32KB"\n'
# The text of the big result: its size is in the path (/json/3000000/mcp).
UNIT = "0123456789abcdef" * 4 + "\n"


def big_text(size: int) -> str:
    return (UNIT * (size // len(UNIT) + 1))[:size]


def answer_of(request_id: Any, size: int) -> bytes:
    result = {"content": [{"type": "text", "text": big_text(size)}], "isError": False}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


class LongAnswers(StubHandler):
    """An MCP server whose tools/call answers are big, sent the way the path says:
    /json/SIZE (one JSON body), /sse/SIZE (one event, in 997-byte chunks), /json-cut/SIZE
    and /sse-cut/SIZE (the connection dropped halfway), /sse-unended/SIZE (the body ends
    halfway through the event, as a body should end), /endless-json/SIZE and
    /endless-sse/SIZE (SIZE bytes with no line end, no event end, not JSON, then the
    connection dropped: the store holds nothing of it to index, so the proxy's memory
    is its own)."""

    def do_POST(self) -> None:
        message = self.message()
        if "id" not in message:
            self.answer(202)
            return
        kind, size = self.path.strip("/").split("/")[:2]
        if message.get("method") != "tools/call":
            result: dict[str, Any] = {"tools": []}
            if message.get("method") == "initialize":
                result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "long", "version": "1"}}
            self.answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                         "result": result}).encode(), "application/json")
            return
        body = answer_of(message["id"], int(size))
        if kind.startswith("endless"):
            body = b""
        if kind.endswith("sse") or kind.startswith("sse"):
            body = b"data: " + body + (b"\n\n" if kind == "sse" else b"")
        self.send_response(200)
        self.send_header("content-type", "application/json" if "json" in kind
                         else "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        if kind.endswith(("-cut", "-unended")):
            body = body[: len(body) // 2]
        pieces = self.pieces(body, int(size) if kind.startswith("endless") else 0)
        for piece in pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        if kind in ("json", "sse", "sse-unended"):
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True  # a dropped connection, for the others

    @staticmethod
    def pieces(body: bytes, endless: int) -> Iterator[bytes]:
        for at in range(0, len(body), 997):
            yield body[at:at + 997]
        filler = b"y" * (64 * 1024)
        for _ in range(endless // len(filler)):
            yield filler


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with loopback_http(LongAnswers) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def env(tmp_path: Path, artifacts: Path) -> dict[str, str]:
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", CONFIG))


def start(url: str, env: dict[str, str]) -> RawProxy:
    raw = RawProxy(proxy_argv("--url", url, "--max-line-size", "64KB"), env)
    assert "result" in raw.initialize()
    return raw


def call(raw: RawProxy, name: str = "big", **arguments: Any) -> dict[str, Any]:
    return raw.request("tools/call", {"name": name, "arguments": arguments})


def finish(raw: RawProxy) -> str:
    raw.close_stdin()
    assert raw.proc.wait(timeout=60) == 0
    return raw.stderr_text()


def stored(artifacts: Path) -> set[str]:
    return {info.ref for info in open_store(artifacts).list_artifacts()}


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_an_answer_over_max_line_size_is_kept_whole_and_read_back(
    upstream: str, env: dict[str, str], artifacts: Path, kind: str
) -> None:
    raw = start(f"{upstream}/{kind}/3000000/mcp", env)
    answer = call(raw)
    text = answer["result"]["content"][0]["text"]
    assert not answer["result"].get("isError")
    assert text.startswith("[toolcap: this response was 2.9 MB, over max_line_size (64.0 KB), "
                           "so it was not read; the whole message is kept as toolcap:")
    assert "read parts of it with read_artifact" in text
    (ref,) = REF.findall(text)
    # The artifact is the server's message byte for byte, though it came in pieces.
    assert open_store(artifacts).read_bytes(ref) == answer_of(answer["id"], 3_000_000)
    back = call(raw, "read_artifact", ref=ref, offset=0, length=40)
    assert back["result"]["content"][0]["text"] == '{"jsonrpc": "2.0", "id": 2, "result": {"'
    err = finish(raw)
    assert "over max_line_size (64.0 KB); the whole message is kept as toolcap:" in err


@pytest.mark.parametrize(("kind", "says"), [
    ("json-cut", "closed the connection in the middle of an answer over max_line_size"),
    ("sse-cut", "closed the connection without an answer (the connection ended inside a "
                "chunked body)"),
    ("sse-unended", "ended the answer's event stream before the answer"),
])
def test_an_answer_cut_short_is_an_error_and_nothing_of_it_is_kept(
    upstream: str, env: dict[str, str], artifacts: Path, kind: str, says: str
) -> None:
    before = stored(artifacts)
    url = f"{upstream}/{kind}/3000000/mcp"
    raw = start(url, env)
    answer = call(raw)
    assert answer["error"]["message"].startswith(f"toolcap proxy: {url} {says}")
    assert REF.search(answer["error"]["message"]) is None
    # The proxy goes on: the next request is answered.
    assert "result" in raw.request("tools/list")
    err = finish(raw)
    assert stored(artifacts) == before
    assert "is kept as" not in err


def peak_rss(pid: int) -> int:
    """The most memory the process ``pid`` has held (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("kind", ["endless-json", "endless-sse"])
def test_an_answer_with_no_end_never_grows_memory_and_is_not_kept(
    upstream: str, env: dict[str, str], artifacts: Path, kind: str
) -> None:
    before = stored(artifacts)
    url = f"{upstream}/{kind}/{64 * MB}/mcp"
    raw = start(url, env)
    assert "result" in raw.request("tools/list")
    baseline = peak_rss(raw.proc.pid)
    answer = call(raw)
    assert "error" in answer and url in answer["error"]["message"]
    # 64 MB went through a 64 KB max_line_size: at most a few chunks were held at once.
    assert peak_rss(raw.proc.pid) - baseline < 16 * MB
    finish(raw)
    assert stored(artifacts) == before
