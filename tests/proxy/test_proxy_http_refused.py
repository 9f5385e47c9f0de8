"""`toolcap proxy --url`: a POST the server refuses with an error status and its own
JSON-RPC error. Each request it carried gets an answer with its own id, over stdio
and through `--listen` alike; one refused whole (a batch, an error whose id is null)
gets the server's error once per request (a client matches answers by id, and under
--listen an answer with no request's id reaches no stream)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from proxy.proxy_helpers import (
    RawProxy,
    StubHandler,
    base_env,
    loopback_http,
    proxy_argv,
    write_config,
)
from proxy.serve_helpers import Listener

BATCH = 101
TOO_MANY = {"code": -32600, "message": "Invalid Request: Batch must not exceed 100 messages"}
NOT_THAT = {"code": -32602, "message": "Invalid params: not that one"}
# Under --listen a request left without an answer keeps its stream open for ever (with
# keep-alives): past this, the test fails instead of waiting with it.
GIVE_UP_SECONDS = 60.0


class _RefusesPings(StubHandler):
    """Answers initialize; refuses any POST of pings with the status the path's first part
    names, and a JSON-RPC error: with a null id (as server-everything refuses a batch
    over 100), or on /named/ the error of the batch's first request, by its id."""

    def do_POST(self) -> None:
        message = self.message()
        status = int(self.path.strip("/").split("/")[0])
        if isinstance(message, list) or message.get("method") == "ping":
            if "/named/" in self.path:
                first = message[0] if isinstance(message, list) else message
                error = {"jsonrpc": "2.0", "id": first["id"], "error": NOT_THAT}
            else:
                error = {"jsonrpc": "2.0", "error": TOO_MANY, "id": None}
            self.answer(status, json.dumps(error).encode(), "application/json")
        elif message.get("method") == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"],
                      "capabilities": {}, "serverInfo": {"name": "refuser", "version": "1"}}
            self.answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                         "result": result}).encode(), "application/json",
                        mcp_session_id="refused-session")
        else:
            self.answer(202)

    def do_GET(self) -> None:
        self.answer(405)

    def do_DELETE(self) -> None:
        self.answer(204)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with loopback_http(_RefusesPings) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def env(tmp_path: Path, artifacts: Path) -> dict[str, str]:
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", ""))


def pings(first: int, count: int) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": first + n, "method": "ping"} for n in range(count)]


def post_to_listener(url: str, headers: dict[str, str], body: Any) -> list[dict[str, Any]]:
    """POST ``body`` to the listening proxy; the messages of its event stream, read to
    the stream's end."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + GIVE_UP_SECONDS
    with httpx2.Client(timeout=GIVE_UP_SECONDS) as client, client.stream(
        "POST", url, content=json.dumps(body).encode(),
        headers={**headers, "Accept": "application/json, text/event-stream",
                 "Content-Type": "application/json"},
    ) as reply:
        for line in reply.iter_lines():
            if line.startswith("data:") and line[5:].strip():
                got.append(json.loads(line[5:]))
            assert time.monotonic() < deadline, f"the stream never ended; it carried {got}"
    return got


def listening(upstream_url: str, env: dict[str, str], tmp_path: Path) -> Listener:
    return Listener(["--listen", "127.0.0.1:0", "--url", upstream_url], env,
                    tmp_path / "stderr.log")


def open_session(url: str) -> dict[str, str]:
    """Initialize a session of the listening proxy: the headers of its later requests."""
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                             "clientInfo": {"name": "batcher", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    with httpx2.Client(timeout=30.0) as client:
        reply = client.post(url, content=json.dumps(initialize).encode(), headers=headers)
        session = {"Mcp-Session-Id": reply.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-03-26"}
        client.post(url, headers={**headers, **session}, content=json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    return session


def refusal_lines(said: list[str]) -> list[str]:
    """The lines of ``said`` on an upstream's failure (not on serving or stopping)."""
    return [line for line in said if " answered " in line]


@pytest.mark.parametrize("status", [400, 401, 500])
def test_a_batch_refused_whole_answers_each_request_with_the_servers_error_under_listen(
    upstream: str, env: dict[str, str], tmp_path: Path, status: int
) -> None:
    with listening(f"{upstream}/{status}/mcp", env, tmp_path) as listener:
        session = open_session(listener.url)
        (single,) = post_to_listener(listener.url, session, pings(1, 1)[0])
        answers = post_to_listener(listener.url, session, pings(100, BATCH))
        said = listener.said()
    assert single == {"jsonrpc": "2.0", "id": 1, "error": TOO_MANY}
    assert sorted(answer["id"] for answer in answers) == list(range(100, 100 + BATCH))
    assert all(answer["error"] == TOO_MANY for answer in answers)
    if status == 401:
        # The client has the server's words; the person who started the proxy is told
        # once how to give credentials, for the single request and the batch alike.
        (reported,) = refusal_lines(said)
        assert f"{upstream}/401/mcp answered HTTP 401 Unauthorized: give credentials" in (
            reported)
    else:
        # The server's own error, passed on: no failure of the proxy's to report, for
        # the batch as for the single request.
        assert refusal_lines(said) == []


def test_a_batch_refused_whole_answers_each_request_with_the_servers_error_over_stdio(
    upstream: str, env: dict[str, str]
) -> None:
    proxy = RawProxy(proxy_argv("--url", f"{upstream}/400/mcp"), env)
    try:
        assert "result" in proxy.initialize()
        proxy.send(pings(1, 1)[0])
        single = proxy.response()
        proxy.send(pings(100, BATCH))  # type: ignore[arg-type]  # a batch is a list
        answers = [proxy.response() for _ in range(BATCH)]
    finally:
        proxy.close_stdin()
        proxy.proc.wait(timeout=30)
    assert single == {"jsonrpc": "2.0", "id": 1, "error": TOO_MANY}
    assert sorted(answer["id"] for answer in answers) == list(range(100, 100 + BATCH))
    assert all(answer["error"] == TOO_MANY for answer in answers)
    assert refusal_lines(proxy.stderr_text().splitlines()) == []


def test_a_refusal_naming_one_request_of_a_batch_answers_the_others_with_the_status(
    upstream: str, env: dict[str, str], tmp_path: Path
) -> None:
    url = f"{upstream}/400/named/mcp"
    with listening(url, env, tmp_path) as listener:
        answers = post_to_listener(listener.url, open_session(listener.url), pings(10, 3))
        said = listener.said()
    by_id = {answer["id"]: answer["error"] for answer in answers}
    assert sorted(by_id) == [10, 11, 12]
    assert by_id[10] == NOT_THAT
    line = f"toolcap proxy: {url} answered HTTP 400 Bad Request ["
    assert by_id[11]["message"].startswith(line) and by_id[12] == by_id[11]
    (reported,) = refusal_lines(said)
    assert reported.startswith(line)
