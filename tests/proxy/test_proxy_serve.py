"""`toolcap proxy --listen`: MCP served over Streamable HTTP to real SDK clients."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import (
    BIGSERVER,
    NPM_BIN,
    REF,
    base_env,
    proxy_argv,
    text_of,
    wait_pid_gone,
    write_config,
)
from proxy.serve_helpers import HttpClient, Listener, listen_env, pid_alive, raw

UPSTREAM = ["--", sys.executable, str(BIGSERVER)]
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
).encode()


def sse_messages(text: str) -> list[dict[str, object]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


@pytest.fixture(scope="module")
def env(artifacts: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("serve")
    config = write_config(home / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    return base_env(artifacts, config)


@pytest.fixture(scope="module")
def listener(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    errlog = tmp_path_factory.mktemp("serve-log") / "stderr.log"
    with Listener(["--listen", "127.0.0.1:0", *UPSTREAM], env, errlog) as served:
        yield served


def test_the_python_sdk_gets_a_bounded_result_and_reads_it_back(
    portal: BlockingPortal, listener: Listener
) -> None:
    with HttpClient(portal, listener.url) as client:
        assert client.init.server_info.name == "bigserver"
        (text,) = text_of(client.call("big_text", {"size": 3_000_000}))
        assert len(text.encode()) <= 32 * 1024
        (ref,) = REF.findall(text)
        back = client.call("read_artifact", {"ref": ref, "offset": 0, "length": 20})
        assert text_of(back)[0] == "line 0000000 the qui"
        assert text_of(client.call("small", {"text": "hi"})) == ["hi"]


def test_two_sessions_have_an_upstream_process_each(
    portal: BlockingPortal, listener: Listener
) -> None:
    with HttpClient(portal, listener.url) as first, HttpClient(portal, listener.url) as second:
        assert text_of(first.call("pid")) != text_of(second.call("pid"))


def test_ending_a_session_with_delete_stops_its_upstream(
    portal: BlockingPortal, listener: Listener
) -> None:
    with HttpClient(portal, listener.url) as client:
        pid = int(text_of(client.call("pid"))[0])
        assert pid_alive(pid)
    # Leaving the client sent DELETE.
    assert wait_pid_gone(pid, timeout=30)


def test_a_browser_origin_that_is_not_loopback_is_refused(listener: Listener) -> None:
    refused = raw(listener.url, "POST", INITIALIZE, {"Origin": "http://evil.example"})
    assert refused.status_code == 403
    assert "Origin 'http://evil.example' is not allowed" in refused.json()["error"]["message"]
    accepted = raw(listener.url, "POST", INITIALIZE, {"Origin": "http://localhost:5173"})
    assert accepted.status_code == 200
    session = accepted.headers["mcp-session-id"]
    assert raw(listener.url, "DELETE", headers={"Mcp-Session-Id": session}).status_code == 204


def test_requests_of_an_unknown_session_get_404_and_without_one_400(listener: Listener) -> None:
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    assert raw(listener.url, "POST", ping, {"Mcp-Session-Id": "nope"}).status_code == 404
    assert raw(listener.url, "POST", ping).status_code == 400
    assert raw(listener.url, "POST", b"{not json").status_code == 400


def _status_of_raw_post(url: str, head: bytes, body: Iterator[bytes]) -> bytes:
    """The status line the proxy answers a POST of ``head`` and ``body`` with."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\n" + head + b"\r\n")
        for chunk in body:
            sock.sendall(chunk)
        answer = b""
        while b"\r\n" not in answer and (got := sock.recv(4096)):
            answer += got
    return answer.split(b"\r\n", 1)[0]


def test_a_body_over_64_mb_is_refused_with_413_declared_or_chunked(listener: Listener) -> None:
    limit = 64 * 1024 * 1024
    # Declared: refused by its Content-Length, before a byte of it is read.
    declared = f"Content-Length: {limit + 1}\r\n".encode()
    assert _status_of_raw_post(listener.url, declared, iter([b"{"])).startswith(b"HTTP/1.1 413")

    # Chunked, no length: refused once what was read of it is over the limit.
    def chunks() -> Iterator[bytes]:
        piece = b" " * (1 << 20)
        for _ in range(64):
            yield b"%x\r\n" % len(piece) + piece + b"\r\n"
        yield b"1\r\n \r\n0\r\n\r\n"

    chunked = b"Transfer-Encoding: chunked\r\n"
    assert _status_of_raw_post(listener.url, chunked, chunks()).startswith(b"HTTP/1.1 413")


def test_an_answer_stream_asks_proxies_in_front_not_to_buffer_it(listener: Listener) -> None:
    reply = raw(listener.url, "POST", INITIALIZE)
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.headers["x-accel-buffering"] == "no"
    assert reply.headers["cache-control"] == "no-cache, no-transform"
    assert sse_messages(reply.text)[0]["id"] == 1
    raw(listener.url, "DELETE", headers={"Mcp-Session-Id": reply.headers["mcp-session-id"]})


def test_a_request_for_another_path_gets_404_naming_the_mcp_path(listener: Listener) -> None:
    other = listener.url.rsplit("/", 1)[0] + "/elsewhere"
    reply = raw(other, "POST", INITIALIZE)
    assert reply.status_code == 404
    assert "/mcp" in reply.json()["error"]["message"]


def test_an_allowed_origin_is_accepted(
    env: dict[str, str], tmp_path: Path, portal: BlockingPortal
) -> None:
    args = ["--listen", "127.0.0.1:0", "--allow-origin", "https://app.example", *UPSTREAM]
    with Listener(args, env, tmp_path / "err.log") as served:
        headers = {"Origin": "https://app.example"}
        reply = raw(served.url, "POST", INITIALIZE, headers)
        assert reply.status_code == 200
        assert sse_messages(reply.text)[0]["id"] == 1
        raw(served.url, "DELETE", headers={"Mcp-Session-Id": reply.headers["mcp-session-id"]})


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    done = subprocess.run(
        proxy_argv("--listen", "0.0.0.0:0", *UPSTREAM),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--auth-token-env" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_or_wrong_token_is_refused_on_a_non_loopback_bind(
    env: dict[str, str], tmp_path: Path, portal: BlockingPortal
) -> None:
    token_env = listen_env(env, PROXY_TOKEN="s3cret-token")
    args = ["--listen", "0.0.0.0:0", "--auth-token-env", "PROXY_TOKEN", *UPSTREAM]
    with Listener(args, token_env, tmp_path / "err.log") as served:
        port = served.url.rsplit(":", 1)[1].split("/")[0]
        url = f"http://127.0.0.1:{port}/mcp"  # only loopback traffic in tests
        missing = raw(url, "POST", INITIALIZE)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = raw(url, "POST", INITIALIZE, {"Authorization": "Bearer s3cret-tokem"})
        assert wrong.status_code == 401
        with HttpClient(portal, url, {"Authorization": "Bearer s3cret-token"}) as client:
            assert text_of(client.call("small", {"text": "ok"})) == ["ok"]


def test_past_the_session_limit_a_new_session_gets_503(env: dict[str, str], tmp_path: Path) -> None:
    args = ["--listen", "127.0.0.1:0", "--max-sessions", "1", *UPSTREAM]
    with Listener(args, env, tmp_path / "err.log") as served:
        first = raw(served.url, "POST", INITIALIZE)
        assert first.status_code == 200
        second = raw(served.url, "POST", INITIALIZE)
        assert second.status_code == 503
        assert "all 1 sessions are in use" in second.json()["error"]["message"]
        raw(served.url, "DELETE", headers={"Mcp-Session-Id": first.headers["mcp-session-id"]})
        assert raw(served.url, "POST", INITIALIZE).status_code == 200


def _start_session_and_get_pid(url: str) -> int:
    opened = raw(url, "POST", INITIALIZE)
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert raw(url, "POST", initialized, session).status_code == 202
    call = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pid","arguments":{}}}'
    (reply,) = sse_messages(raw(url, "POST", call, session).text)
    result = reply["result"]
    assert isinstance(result, dict)
    return int(result["content"][0]["text"])


def test_a_client_that_goes_away_without_delete_leaves_no_upstream_behind(
    env: dict[str, str], tmp_path: Path
) -> None:
    args = ["--listen", "127.0.0.1:0", "--session-idle-timeout", "0.5", *UPSTREAM]
    with Listener(args, env, tmp_path / "err.log") as served:
        pid = _start_session_and_get_pid(served.url)
        # No DELETE: the idle session is ended, and its upstream with it.
        assert wait_pid_gone(pid, timeout=30)


def test_stopping_the_proxy_stops_every_upstream(env: dict[str, str], tmp_path: Path) -> None:
    served = Listener(["--listen", "127.0.0.1:0", *UPSTREAM], env, tmp_path / "err.log")
    pids = [_start_session_and_get_pid(served.url) for _ in range(2)]
    served.stop()  # SIGTERM: a graceful shutdown that ends every session first
    for pid in pids:
        assert wait_pid_gone(pid, timeout=30)
    assert "Traceback" not in "".join(served.lines)


NODE_CLIENT = Path(__file__).resolve().parents[1] / "npm" / "http_client.mjs"


@pytest.mark.skipif(
    shutil.which("node") is None or not (NPM_BIN.parent / "@modelcontextprotocol" / "sdk").exists(),
    reason="needs node and the TypeScript SDK in tests/npm",
)
def test_the_typescript_sdk_gets_a_bounded_result_and_reads_it_back(listener: Listener) -> None:
    done = subprocess.run(
        ["node", str(NODE_CLIENT), listener.url, "big_text", '{"size": 3000000}'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert len(reply["text"].encode()) <= 32 * 1024
    assert REF.search(reply["text"])
    assert reply["read"] == "line 0000000 the qui"


def test_a_stateless_2026_client_discovers_the_server_and_calls_its_tools(
    portal: BlockingPortal, listener: Listener
) -> None:
    with HttpClient(portal, listener.url, stateless=True) as client:
        assert "2026-07-28" in client.discovered.supported_versions
        assert text_of(client.call("small", {"text": "stateless"})) == ["stateless"]


def test_a_stateless_2026_client_gets_a_bounded_result_and_reads_it_back(
    portal: BlockingPortal, listener: Listener
) -> None:
    with HttpClient(portal, listener.url, stateless=True) as client:
        (text,) = text_of(client.call("big_text", {"size": 3_000_000}))
        assert len(text.encode()) <= 32 * 1024
        (ref,) = REF.findall(text)
        back = client.call("read_artifact", {"ref": ref, "offset": 0, "length": 20})
        assert text_of(back)[0] == "line 0000000 the qui"


def test_a_stateless_typed_call_before_any_listing_is_cut_to_the_schema_the_client_was_shown(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path
) -> None:
    # The client listed through another replica: this one, which has seen no listing
    # (a listener of its own), lists the tools itself before it relays the call.
    jsonschema = pytest.importorskip("jsonschema")
    with Listener(["--listen", "127.0.0.1:0", *UPSTREAM], env, tmp_path / "err.log") as fresh, \
            HttpClient(portal, fresh.url, stateless=True) as client:
        result = client.call("listing", {"count": 2000})
        assert not result.is_error, text_of(result)
        assert client.session is not None
        (tool,) = [tool for tool in portal.call(client.session.list_tools).tools
                   if tool.name == "listing"]
        assert tool.output_schema is not None
        jsonschema.validate(result.structured_content, tool.output_schema)
        assert len(json.dumps(result.structured_content, separators=(",", ":"))) < 32 * 1024


def test_stateless_requests_with_the_same_id_get_each_their_own_answer(
    listener: Listener,
) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    headers = {"Mcp-Protocol-Version": "2026-07-28"}
    replies = []
    for text in ("one", "two"):
        call = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "small", "arguments": {"text": text}, "_meta": meta},
        }
        reply = raw(listener.url, "POST", json.dumps(call).encode(), headers)
        assert reply.status_code == 200
        assert "mcp-session-id" not in reply.headers
        replies.append(sse_messages(reply.text))
    for (message,), text in zip(replies, ("one", "two"), strict=True):
        assert message["id"] == 5
        result = message["result"]
        assert isinstance(result, dict)
        assert result["content"][0]["text"] == text
