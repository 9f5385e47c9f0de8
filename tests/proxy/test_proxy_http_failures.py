"""`toolcap proxy --url` failures: one line on stderr and an error the client shows, naming
the URL, for each way a remote upstream can fail (real loopback servers, no network)."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal
from mcp import MCPError

from proxy.proxy_helpers import (
    Client,
    StubHandler,
    base_env,
    loopback_http,
    proxy_argv,
    write_config,
)


class _StatusHandler(http.server.BaseHTTPRequestHandler):
    """Answers every request with the status named by the path: /401, /404, /500 ..."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        # As an HTTP proxy, the request line carries the whole URL.
        status = int(urllib.parse.urlsplit(self.path).path.strip("/").split("/")[0])
        body = b"token missing or expired" if status == 401 else b"<html>nope</html>"
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


def serving(context: ssl.SSLContext | None = None) -> contextlib.AbstractContextManager[int]:
    """A loopback _StatusHandler server (over TLS with ``context``); yields its port."""
    return loopback_http(_StatusHandler, context)


@pytest.fixture(scope="module")
def status_server() -> Iterator[str]:
    with serving() as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def env(tmp_path: Path, artifacts: Path) -> dict[str, str]:
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", ""))


def failed_initialize(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, *args: str
) -> tuple[str, list[str]]:
    """Start a real client on ``toolcap proxy ARGS``: the error it shows, and stderr's lines."""
    errlog = tmp_path / "stderr.log"
    with pytest.raises(BaseException) as failed, Client(portal, proxy_argv(*args), env, errlog):
        pass
    error: BaseException = failed.value
    while len(getattr(error, "exceptions", ())) == 1:
        error = error.exceptions[0]  # type: ignore[attr-defined]  # the SDK's task groups wrap what initialize raised
    assert isinstance(error, MCPError), repr(failed.value)
    return str(error), errlog.read_text().strip().splitlines()


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "HTTP 401 Unauthorized: give credentials with --header-env Authorization=VAR, "
              "VAR holding 'Bearer TOKEN'"),
        (403, "HTTP 403 Forbidden: the credentials were refused (check the token given with "
              "--header-env)"),
        (404, "HTTP 404 Not Found: check the URL"),
        # What an older HTTP+SSE server (its endpoint takes GET only) answers a POST.
        (405, "HTTP 405 Method Not Allowed: not a Streamable HTTP endpoint (an older "
              "HTTP+SSE server?)"),
        (500, "HTTP 500 Internal Server Error: the server failed (see its logs)"),
        (503, "HTTP 503 Service Unavailable: the server failed"),
    ],
)
def test_an_http_error_status_is_one_line_naming_the_url_and_what_to_do(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, status_server: str,
    status: int, hint: str,
) -> None:
    url = f"{status_server}/{status}/mcp"
    shown, lines = failed_initialize(portal, env, tmp_path, "--url", url)
    assert lines == [lines[0]] and lines[0].startswith(f"toolcap proxy: {url} answered {hint}")
    assert shown == lines[0]


def test_an_http_proxy_from_the_environment_is_used(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, status_server: str
) -> None:
    # The host does not resolve: only through the proxy does the request get an answer.
    url = "http://upstream.invalid/401/mcp"
    _, lines = failed_initialize(portal, {**env, "HTTP_PROXY": status_server}, tmp_path,
                                 "--url", url)
    assert lines[0].startswith(f"toolcap proxy: {url} answered HTTP 401 Unauthorized")


def test_the_servers_own_words_on_an_error_status_are_kept_on_the_line(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, status_server: str
) -> None:
    _, lines = failed_initialize(portal, env, tmp_path, "--url", f"{status_server}/401")
    assert lines[0].endswith("[token missing or expired]")


def test_a_refused_connection_says_so_and_names_the_url(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has no listener
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    shown, lines = failed_initialize(portal, env, tmp_path, "--url", url)
    assert lines == [
        f"toolcap proxy: cannot connect to {url}: connection refused (is the server running?)"
    ]
    assert shown == lines[0]


def test_an_unknown_host_says_so_and_names_the_url(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path
) -> None:
    url = "http://no-such-host.invalid/mcp"
    shown, lines = failed_initialize(portal, env, tmp_path, "--url", url)
    assert lines == [
        f"toolcap proxy: cannot connect to {url}: unknown host 'no-such-host.invalid' "
        "(check the URL)"
    ]
    assert shown == lines[0]


@pytest.fixture(scope="module")
def tls_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a self-signed certificate")
    home = tmp_path_factory.mktemp("tls")
    cert, key = home / "cert.pem", home / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    with serving(context) as port:
        yield f"https://127.0.0.1:{port}/500"


def test_an_untrusted_tls_certificate_says_so_and_names_the_url(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, tls_url: str
) -> None:
    shown, lines = failed_initialize(portal, env, tmp_path, "--url", tls_url)
    assert lines == [
        f"toolcap proxy: cannot connect to {tls_url}: its TLS certificate was refused "
        "(self-signed certificate); check the URL, or trust its CA with SSL_CERT_FILE"
    ]
    assert shown == lines[0]


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        stop.set()
        listener.close()
        for conn in accepted:
            conn.close()


def test_a_server_that_never_answers_times_out_after_the_given_timeout(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, silent_url: str
) -> None:
    shown, lines = failed_initialize(
        portal, env, tmp_path, "--url", silent_url, "--timeout", "0.5"
    )
    assert lines == [
        f"toolcap proxy: {silent_url} did not answer within 0.5 s "
        "(raise --timeout if the server is slow)"
    ]
    assert shown == lines[0]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(
    env: dict[str, str], value: str
) -> None:
    argv = proxy_argv("--url", "http://127.0.0.1:9/mcp", "--timeout", value)
    done = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--timeout must be a positive number of seconds" in done.stderr.decode()


def test_url_without_the_mcp_extra_is_one_line_naming_the_extra(env: dict[str, str]) -> None:
    # The SDK made unimportable, as in an install without the extra.
    code = ("import sys; sys.modules['httpx2'] = None; from toolcap.cli import main; "
            "sys.exit(main(['proxy', '--url', 'http://127.0.0.1:9/mcp']))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "toolcap: error: --url needs the MCP SDK (httpx2 is not installed): "
        "pip install 'toolcap[mcp]' (from a clone: pip install '.[mcp]')"
    ]


def test_a_url_that_is_not_http_is_a_usage_error(env: dict[str, str]) -> None:
    done = subprocess.run(proxy_argv("--url", "localhost:8000/mcp"), env=env,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "toolcap: error: --url must start with http:// or https://, got 'localhost:8000/mcp'"
    ]


class _CutStreamHandler(StubHandler):
    """Answers initialize on an event stream that ends before the answer: /cut gives no
    event id to resume from; /resume does, and so does /drop, whose connection drops
    inside the answer's event; a GET with Last-Event-ID answers."""

    initialize_id: object = None

    def _events(self, text: str) -> None:
        self.answer(200, text.encode(), "text/event-stream", mcp_session_id="cut-session")

    def _cut_body(self, sent: bytes, **headers: str) -> None:
        """An event stream of ``sent``, its connection closed 4 KB before the end its
        content-length says."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("content-length", str(len(sent) + 4096))
        self.end_headers()
        self.wfile.write(sent)
        self.close_connection = True

    def do_POST(self) -> None:
        message = self.message()
        if message.get("method") != "initialize":
            self.answer(202)
            return
        type(self).initialize_id = message["id"]
        if self.path.startswith("/cut"):
            note = {"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "starting"}}
            self._events(f"data: {json.dumps(note)}\n\n")
        elif self.path.startswith("/after"):
            # The answer whole, then the connection drops before the body's end.
            result = {"protocolVersion": "2025-06-18", "capabilities": {},
                      "serverInfo": {"name": "answered", "version": "1"}}
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            self._cut_body(f"id: e1\ndata: {json.dumps(answer)}\n\n".encode())
        elif self.path.startswith("/drop"):
            # The connection drops inside the answer's event, its body far from whole.
            self._cut_body(b'retry: 10\nid: e1\ndata:\n\nid: e2\ndata: {"jsonrpc": "2.0", "id',
                           mcp_session_id="cut-session")
        else:
            self._events("retry: 10\nid: e1\ndata:\n\n")

    def do_GET(self) -> None:
        if self.headers.get("last-event-id") != "e1":
            self.answer(405)
            return
        result = {"protocolVersion": "2025-06-18", "capabilities": {},
                  "serverInfo": {"name": "resumed", "version": "1"}}
        answer = {"jsonrpc": "2.0", "id": type(self).initialize_id, "result": result}
        self._events(f"id: e2\ndata: {json.dumps(answer)}\n\n")

    def do_DELETE(self) -> None:
        self.send_response(204)
        self.end_headers()


@pytest.fixture(scope="module")
def cut_server() -> Iterator[str]:
    with loopback_http(_CutStreamHandler) as port:
        yield f"http://127.0.0.1:{port}"


def test_an_answer_stream_that_ends_before_the_answer_is_an_error_naming_the_url(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, cut_server: str
) -> None:
    url = f"{cut_server}/cut/mcp"
    shown, lines = failed_initialize(portal, env, tmp_path, "--url", url)
    assert lines == [f"toolcap proxy: {url} ended the answer's event stream before the answer"]
    assert shown == lines[0]


# /resume: the stream ends before the answer; /drop: its connection drops inside it.
@pytest.mark.parametrize("path", ["resume", "drop"])
def test_an_answer_stream_cut_short_is_resumed_after_its_last_event(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, cut_server: str, path: str
) -> None:
    argv = proxy_argv("--url", f"{cut_server}/{path}/mcp")
    with Client(portal, argv, env, tmp_path / "stderr.log") as client:
        assert client.init.server_info.name == "resumed"


def test_a_connection_that_drops_after_the_answer_is_no_failure(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, cut_server: str
) -> None:
    argv = proxy_argv("--url", f"{cut_server}/after/mcp")
    with Client(portal, argv, env, tmp_path / "stderr.log") as client:
        assert client.init.server_info.name == "answered"
    assert "closed the connection" not in (tmp_path / "stderr.log").read_text()


class _HugeAnswerHandler(StubHandler):
    """Answers initialize with 1 MB of padding, as JSON (/json) or as one event (/sse)."""

    def do_POST(self) -> None:
        message = self.message()
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "padding": "x" * (1 << 20),
                  "serverInfo": {"name": "huge", "version": "1"}}
        answer = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result})
        if self.path.startswith("/sse"):
            self.answer(200, f"data: {answer}\n\n".encode(), "text/event-stream")
        else:
            self.answer(200, answer.encode(), "application/json")


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_an_initialize_answer_over_max_line_size_is_kept_never_held_and_the_client_told(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    with loopback_http(_HugeAnswerHandler) as port:
        url = f"http://127.0.0.1:{port}/{kind}/mcp"
        shown, lines = failed_initialize(portal, env, tmp_path, "--url", url,
                                         "--max-line-size", "64KB")
    (line,) = lines
    assert line.startswith("toolcap proxy: a message from the upstream server was 1.0 MB, "
                           "over max_line_size (64.0 KB); the whole message is kept as toolcap:")
    assert shown.startswith("[toolcap: this response was 1.0 MB, over max_line_size (64.0 KB), "
                            "so it was not read; the whole message is kept as toolcap:")


_NO_ANSWERS = {
    "status": b'{"status": "ok"}',
    "garbage": b"<html>not json</html>",
    "other": b'{"jsonrpc": "2.0", "id": "not-yours", "result": {}}',
    "null": b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "bad"}}',
}


class _NoAnswerHandler(StubHandler):
    """Answers every POST with 200 application/json that answers nothing: the body
    named by the path (/status: a JSON object with no id, /garbage: not JSON,
    /other: the answer to another request, /null: an error with a null id)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.answer(200, _NO_ANSWERS[self.path.strip("/").split("/")[0]], "application/json")


@pytest.mark.parametrize("body", sorted(_NO_ANSWERS))
def test_a_json_reply_that_answers_no_request_is_an_error_naming_the_url_not_a_hang(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path, body: str
) -> None:
    with loopback_http(_NoAnswerHandler) as port:
        url = f"http://127.0.0.1:{port}/{body}/mcp"
        shown, lines = failed_initialize(portal, env, tmp_path, "--url", url)
    assert lines == [f"toolcap proxy: {url} answered with JSON that answers no request "
                     "it was sent"]
    assert shown == lines[0]


def test_a_session_stopped_while_its_server_never_answers_leaves_no_thread() -> None:
    # A server that accepts and never answers: the initialize exchange waits on it.
    # Stopping the session gives it up after the grace period, thread and socket both.
    from toolcap.proxy._http import HttpUpstream

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        upstream = HttpUpstream(url, {}, 60.0)
        upstream.run(lambda holder: None, lambda: None)
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}}
        upstream.send(json.dumps(initialize).encode())
        held, _ = listener.accept()  # the request arrived; no answer will
        with held:
            upstream.stop(grace=0.2)
            assert upstream._thread is not None
            upstream._thread.join(10)
            assert not upstream._thread.is_alive()
