"""`toolcap proxy --url`: an upstream reached over Streamable HTTP, with auth headers."""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    Client,
    RawProxy,
    StubHandler,
    base_env,
    load_bigserver,
    loopback_http,
    open_store,
    proxy_argv,
    text_of,
    write_config,
)
from proxy.serve_helpers import HttpClient, Listener


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(BIGSERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready: queue.Queue[bool] = queue.Queue()

    def watch() -> None:
        assert server.stderr is not None
        for line in server.stderr:
            if "Uvicorn running" in line:
                ready.put(True)
        ready.put(False)

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert ready.get(timeout=60), "the HTTP test server did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def client(
    portal: BlockingPortal,
    artifacts: Path,
    http_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("http")
    config = write_config(home / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    argv = proxy_argv("--url", http_url, "--header", "X-Test-Token: secret-123")
    with Client(portal, argv, base_env(artifacts, config), home / "stderr.log") as connected:
        yield connected


@contextlib.contextmanager
def listening_client(portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path,
                     *options: str, stateless: bool = False) -> Iterator[HttpClient]:
    """An SDK client of `toolcap proxy --listen --url http_url [OPTIONS]` (a 32 KB
    threshold)."""
    config = write_config(tmp_path / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    args = ["--listen", "127.0.0.1:0", "--url", http_url, *options]
    with Listener(args, base_env(artifacts, config), tmp_path / "stderr.log") as listener, \
            HttpClient(portal, listener.url, stateless=stateless) as client:
        yield client


def test_an_http_upstream_is_relayed_with_its_server_info(client: Client) -> None:
    assert client.init.server_info.name == "bigserver"
    assert client.session is not None
    names = [tool.name for tool in client.run(client.session.list_tools).tools]
    assert names[-1] == "read_artifact"


def test_headers_given_with_header_reach_the_http_upstream(client: Client) -> None:
    assert text_of(client.call("header", {"name": "x-test-token"})) == ["secret-123"]


def test_results_from_an_http_upstream_are_bounded_and_readable_back(client: Client) -> None:
    (text,) = text_of(client.call("big_text", {"size": 3_000_000}))
    assert len(text.encode()) <= 32 * 1024
    (ref,) = REF.findall(text)
    back = client.call("read_artifact", {"ref": ref, "offset": 0, "length": 20})
    assert text_of(back)[0] == "line 0000000 the qui"


def test_progress_from_an_http_upstream_reaches_the_client(client: Client) -> None:
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    assert text_of(client.call("slow", {"steps": 3}, progress_callback=on_progress)) == [
        "did 3 steps"
    ]
    assert seen == [1, 2, 3]


def test_sampling_requests_from_an_http_upstream_reach_the_client(client: Client) -> None:
    assert text_of(client.call("sample", {"prompt": "over http?"})) == ["sampled: forty-two"]
    assert client.sampled[-1] == "over http?"


def test_a_listening_proxy_relays_each_session_to_the_http_upstream(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    args = ["--listen", "127.0.0.1:0", "--url", http_url, "--header", "X-Test-Token: s-1"]
    with Listener(args, base_env(artifacts, config), tmp_path / "stderr.log") as listener, \
            HttpClient(portal, listener.url) as first, HttpClient(portal, listener.url) as second:
        (text,) = text_of(first.call("big_text", {"size": 3_000_000}))
        assert len(text.encode()) <= 32 * 1024
        (ref,) = REF.findall(text)
        back = second.call("read_artifact", {"ref": ref, "offset": 0, "length": 20})
        assert text_of(back)[0] == "line 0000000 the qui"
        assert text_of(second.call("header", {"name": "x-test-token"})) == ["s-1"]
        assert text_of(first.call("small", {"text": "one"})) == ["one"]
        assert text_of(second.call("small", {"text": "two"})) == ["two"]


def test_a_stateless_client_reaches_the_http_upstream_through_a_listening_proxy(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    with listening_client(portal, http_url, artifacts, tmp_path, stateless=True) as client:
        (text,) = text_of(client.call("big_text", {"size": 100_000}))
        assert len(text.encode()) <= 32 * 1024
        assert text_of(client.call("small", {"text": "hi"})) == ["hi"]


def test_a_listening_proxy_keeps_the_order_of_progress_results_to_bound_and_small_answers(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    # Under --listen the upstream's exchanges run on the server's loop: a small answer
    # is handed on there, a result to bound on a thread; neither may overtake the other.
    with listening_client(portal, http_url, artifacts, tmp_path) as client:
        session = client.session
        assert session is not None
        seen: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            seen.append(value)

        async def slow() -> Any:
            return await session.call_tool("slow", {"steps": 5}, progress_callback=on_progress)

        assert text_of(portal.call(slow)) == ["did 5 steps"]
        assert seen == [1, 2, 3, 4, 5]
        for size in (40_000, 3_000_000):
            (text,) = text_of(client.call("big_text", {"size": size}))
            assert len(text.encode()) <= 32 * 1024 and REF.search(text)
            assert text_of(client.call("small", {"text": f"after {size}"})) == [f"after {size}"]


class _CrLinesHandler(StubHandler):
    """Answers initialize on an event stream whose lines end with a bare CR."""

    def do_POST(self) -> None:
        message = self.message()
        if message.get("method") != "initialize":
            self.answer(202)
            return
        result = {"protocolVersion": "2025-06-18", "capabilities": {},
                  "serverInfo": {"name": "cr-lines", "version": "1"}}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        body = f": hello\rid: e1\revent: message\rdata: {answer}\r\r".encode()
        self.answer(200, body, "text/event-stream")

    def do_DELETE(self) -> None:
        self.send_response(204)
        self.end_headers()


def test_an_event_stream_whose_lines_end_with_a_bare_cr_is_read(
    portal: BlockingPortal, artifacts: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    with loopback_http(_CrLinesHandler) as port:
        argv = proxy_argv("--url", f"http://127.0.0.1:{port}/mcp")
        with Client(portal, argv, base_env(artifacts, config), tmp_path / "stderr.log") as client:
            assert client.init.server_info.name == "cr-lines"


def test_a_2026_07_28_call_mirrors_its_marked_arguments_in_mcp_param_headers(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    # The SDK's server refuses (HeaderMismatch) a call whose marked arguments are not
    # mirrored in Mcp-Param-* headers; the proxy learns the marks from tools/list.
    with listening_client(portal, http_url, artifacts, tmp_path, stateless=True) as client:
        session = client.session
        assert session is not None
        assert "regional" in [tool.name for tool in portal.call(session.list_tools).tools]
        for region, shard in (("eu-west-1", 7), ("Zürich ", -3)):
            result = client.call("regional", {"region": region, "shard": shard})
            assert not result.is_error, text_of(result)
            assert text_of(result) == [f"region {region} shard {shard}"]


def test_a_2026_07_28_call_made_before_any_listing_reaches_the_sdk_server_with_its_headers(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    # No tools/list has passed this proxy (the client listed through another replica,
    # say): the server refuses the call (HeaderMismatch), the proxy lists and retries.
    with listening_client(portal, http_url, artifacts, tmp_path, stateless=True) as client:
        result = client.call("regional", {"region": "ap-south-2", "shard": 4})
        assert not result.is_error, text_of(result)
        assert text_of(result) == ["region ap-south-2 shard 4"]


def test_a_typed_result_cut_before_any_listing_still_validates_against_its_schema(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    # The client knows `listing`'s output schema from a listing through another replica;
    # this proxy has seen none, so it lists the tools itself before it cuts the result.
    jsonschema = pytest.importorskip("jsonschema")
    with listening_client(portal, http_url, artifacts, tmp_path, stateless=True) as client:
        result = client.call("listing", {"count": 2000})
        assert not result.is_error, text_of(result)
        assert len(json.dumps(result.structured_content, separators=(",", ":"))) < 32 * 1024
        assert client.session is not None
        (tool,) = [tool for tool in portal.call(client.session.list_tools).tools
                   if tool.name == "listing"]
        assert tool.output_schema is not None
        jsonschema.validate(result.structured_content, tool.output_schema)


def test_a_header_given_with_header_env_reaches_the_upstream_and_stays_out_of_argv(
    http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    secret = "Bearer s3cret-from-the-environment"
    env = {**base_env(artifacts, write_config(tmp_path / "toolcap.toml", "")),
           "MY_UPSTREAM_TOKEN": secret}
    raw = RawProxy(proxy_argv("--url", http_url, "--header-env", "X-Test-Token=MY_UPSTREAM_TOKEN"),
                   env)
    try:
        raw.initialize()
        answer = raw.request("tools/call", {"name": "header",
                                            "arguments": {"name": "x-test-token"}})
        assert answer["result"]["content"][0]["text"] == secret
        # What `ps` shows every local user: the proxy's command line, without the secret.
        cmdline = Path(f"/proc/{raw.proc.pid}/cmdline").read_bytes()
        assert b"--header-env\0X-Test-Token=MY_UPSTREAM_TOKEN" in cmdline
        assert b"s3cret" not in cmdline
    finally:
        raw.close_stdin()
        assert raw.proc.wait(timeout=30) == 0


def test_an_answer_over_max_line_size_from_a_real_http_server_is_kept_and_read_back(
    http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    raw = RawProxy(proxy_argv("--url", http_url, "--max-line-size", "1MB"),
                   base_env(artifacts, config))
    try:
        raw.initialize()
        answer = raw.request("tools/call", {"name": "big_text", "arguments": {"size": 3_000_000}})
        text = answer["result"]["content"][0]["text"]
        assert "over max_line_size (1.0 MB), so it was not read" in text
        (ref,) = REF.findall(text)
        # The message as the server sent it, its whole result in it.
        kept = json.loads(open_store(artifacts).read_bytes(ref))
        assert kept["id"] == answer["id"]
        assert kept["result"]["content"][0]["text"] == load_bigserver().numbered_text(
            3_000_000, "line")
        back = raw.request("tools/call", {"name": "read_artifact",
                                          "arguments": {"ref": ref, "offset": 0, "length": 16}})
        assert back["result"]["content"][0]["text"] == '{"jsonrpc":"2.0"'
    finally:
        raw.close_stdin()
        assert raw.proc.wait(timeout=30) == 0


def test_a_listening_proxy_keeps_an_answer_over_max_line_size_from_its_http_upstream(
    portal: BlockingPortal, http_url: str, artifacts: Path, tmp_path: Path
) -> None:
    with listening_client(portal, http_url, artifacts, tmp_path,
                          "--max-line-size", "1MB") as client:
        assert client.session is not None
        portal.call(client.session.list_tools)  # as clients do: big_text's schema is known
        result = client.call("big_text", {"size": 3_000_000})
        # A note has no structure: for a tool with an output schema it is an error result.
        assert result.is_error
        (text,) = text_of(result)
        assert "over max_line_size (1.0 MB), so it was not read" in text
        (ref,) = REF.findall(text)
        back = client.call("read_artifact", {"ref": ref, "offset": 0, "length": 16})
        assert text_of(back)[0].startswith('{"jsonrpc":"2.0"')
        assert text_of(client.call("small", {"text": "after"})) == ["after"]
