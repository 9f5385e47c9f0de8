"""Failures of the upstream and of the client: clear messages, no hang, no orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    Client,
    RawProxy,
    base_env,
    parent_pid,
    proxy_argv,
    text_of,
    wait_pid_gone,
    write_config,
)

CONFIG = '[tools."*"]\nsize_threshold = "32KB"\n'


@pytest.fixture
def env(tmp_path: Path, artifacts: Path) -> dict[str, str]:
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", CONFIG))


def upstream_pid(raw: RawProxy) -> int:
    response = raw.request("tools/call", {"name": "pid", "arguments": {}})
    return int(response["result"]["content"][0]["text"])


def test_a_missing_upstream_command_is_one_line_and_a_non_zero_exit(
    env: dict[str, str],
) -> None:
    done = subprocess.run(
        proxy_argv("--", "no-such-mcp-server-xyz", "--flag"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0
    lines = done.stderr.decode().strip().splitlines()
    assert lines == [
        "toolcap proxy: cannot start the upstream server: command not found: no-such-mcp-server-xyz"
    ]
    assert done.stdout == b""


def test_no_upstream_at_all_is_a_usage_error(env: dict[str, str]) -> None:
    done = subprocess.run(
        proxy_argv(), stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 2
    assert "no upstream server" in done.stderr.decode()


def test_an_upstream_that_exits_at_start_fails_initialize_and_the_proxy_exits_non_zero(
    env: dict[str, str],
) -> None:
    raw = RawProxy(proxy_argv("--", sys.executable, "-c", "import sys; sys.exit(3)"), env)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    response = raw.request_or_eof("initialize", init)
    # Either the initialize reached the proxy in time and got an error, or the
    # proxy was gone before it arrived; it never hangs and never succeeds.
    if response is not None:
        assert "exited before it answered initialize" in response["error"]["message"]
    assert raw.proc.wait(timeout=30) == 1
    lines = raw.stderr_text().strip().splitlines()
    assert lines[-1] == (
        "toolcap proxy: the upstream server exited before it answered initialize (exit code 3)"
    )


def test_an_upstream_crash_mid_call_gives_that_call_an_error_and_the_proxy_exits(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path
) -> None:
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, env, tmp_path / "stderr.log") as client:
        upstream = int(text_of(client.call("pid"))[0])
        proxy = parent_pid(upstream)
        result = client.call("crash")
        assert result.is_error
        assert "the upstream server exited (exit code 3)" in text_of(result)[0]
        assert wait_pid_gone(proxy)
        assert wait_pid_gone(upstream)
    assert "toolcap proxy: the upstream server exited (exit code 3)" in client.stderr()


def test_a_client_that_disconnects_leaves_no_upstream_behind(env: dict[str, str]) -> None:
    raw = RawProxy(proxy_argv("--", sys.executable, str(BIGSERVER)), env)
    raw.initialize()
    upstream = upstream_pid(raw)
    raw.close_stdin()
    assert raw.proc.wait(timeout=30) == 0
    assert wait_pid_gone(upstream)


def test_sigterm_to_the_proxy_terminates_the_upstream(env: dict[str, str]) -> None:
    raw = RawProxy(proxy_argv("--", sys.executable, str(BIGSERVER)), env)
    raw.initialize()
    upstream = upstream_pid(raw)
    raw.proc.send_signal(signal.SIGTERM)
    assert raw.proc.wait(timeout=30) == 0
    assert wait_pid_gone(upstream)


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux only")
def test_a_killed_proxy_does_not_orphan_the_upstream(env: dict[str, str]) -> None:
    raw = RawProxy(proxy_argv("--", sys.executable, str(BIGSERVER)), env)
    raw.initialize()
    upstream = upstream_pid(raw)
    os.kill(raw.proc.pid, signal.SIGKILL)
    raw.proc.wait(timeout=30)
    assert wait_pid_gone(upstream)


def test_a_read_artifact_name_taken_upstream_is_a_clear_error(env: dict[str, str]) -> None:
    argv = proxy_argv("--read-artifact-tool", "big_text", "--", sys.executable, str(BIGSERVER))
    raw = RawProxy(argv, env)
    raw.initialize()
    response = raw.request("tools/list")
    assert "already has a tool named 'big_text'" in response["error"]["message"]
    assert raw.proc.wait(timeout=30) == 2
    assert "--read-artifact-tool" in raw.stderr_text()


@pytest.mark.parametrize(
    ("flag", "expected"),
    [(["--read-artifact-tool", "fetch_kept"], "fetch_kept"), (["--no-read-artifact"], None)],
)
def test_the_read_artifact_tool_can_be_renamed_or_turned_off(
    env: dict[str, str], flag: list[str], expected: str | None
) -> None:
    if True:
        raw = RawProxy(proxy_argv(*flag, "--", sys.executable, str(BIGSERVER)), env)
        raw.initialize()
        names = [tool["name"] for tool in raw.request("tools/list")["result"]["tools"]]
        assert (names[-1] == expected) if expected else ("read_artifact" not in names)
        raw.close_stdin()
        assert raw.proc.wait(timeout=30) == 0


def test_an_unknown_method_is_relayed_and_answered_by_the_upstream(env: dict[str, str]) -> None:
    raw = RawProxy(proxy_argv("--", sys.executable, str(BIGSERVER)), env)
    raw.initialize()
    response = raw.request("no/such/method", {"x": 1})
    assert response["error"]["code"] == -32601
    raw.close_stdin()
    assert raw.proc.wait(timeout=30) == 0


def test_a_server_without_tools_still_gets_read_artifact_for_its_resources(
    portal: BlockingPortal, env: dict[str, str], tmp_path: Path
) -> None:
    server = Path(__file__).resolve().parents[1] / "servers" / "resources_only.py"
    argv = proxy_argv("--", sys.executable, str(server))
    with Client(portal, argv, env, tmp_path / "stderr.log") as client:
        assert client.init.capabilities.tools is not None
        assert client.session is not None
        tools = client.run(client.session.list_tools).tools
        assert [tool.name for tool in tools] == ["read_artifact"]
        (content,) = client.run(client.session.read_resource, "data://big").contents
        assert len(content.text.encode()) <= 32 * 1024
        (ref,) = REF.findall(content.text)
        back = client.call("read_artifact", {"ref": ref, "start_line": 2, "end_line": 3})
        assert text_of(back)[0] == "resource line 000001\nresource line 000002\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://127.0.0.1:9/mcp", "--", "server"], "not both"),
        (["--header", "A: b", "--", "server"], "--header applies to --url only"),
        (["--url", "http://127.0.0.1:9/mcp", "--header", "no-colon"], "--header must look like"),
    ],
)
def test_conflicting_options_are_a_one_line_usage_error(
    env: dict[str, str], args: list[str], message: str
) -> None:
    done = subprocess.run(
        proxy_argv(*args), stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def stubborn_wrapper(pids: Path, *server: str) -> list[str]:
    """A wrapper shell that ignores SIGTERM and stdin closing: it starts a background
    child (which ignores SIGTERM too), records both pids, runs the server, then waits."""
    body = (f"trap '' TERM; sleep 600 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; "
            f"{' '.join(server)}; wait")
    return ["sh", "-c", body]


def wrapped_pids(pids: Path) -> list[int]:
    return [int(p) for p in pids.read_text().split()]


@pytest.mark.parametrize("how", ["client-goes", "sigterm", "sigkill"])
def test_no_process_of_a_wrapped_upstream_outlives_the_proxy(
    env: dict[str, str], tmp_path: Path, how: str
) -> None:
    pids = tmp_path / "pids"
    raw = RawProxy(proxy_argv("--", *stubborn_wrapper(pids, sys.executable, str(BIGSERVER))), env)
    raw.initialize()
    server = upstream_pid(raw)
    wrapper, background = wrapped_pids(pids)  # written before the server started
    if how == "client-goes":
        raw.close_stdin()
    else:
        raw.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    raw.proc.wait(timeout=60)
    for pid in (server, wrapper, background):
        assert wait_pid_gone(pid, timeout=60), f"{pid} outlived the proxy ({how})"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--header-env", "A=B", "--", "server"], "--header-env applies to --url only"),
        (["--header-env", "Authorization"], "--header-env must look like 'Name=VARIABLE'"),
        (["--header-env", "Authorization: Bearer x"], "--header-env must look like"),
        (["--header-env", "Authorization=TOOLCAP_TEST_UNSET_VARIABLE"],
         "--header-env Authorization=TOOLCAP_TEST_UNSET_VARIABLE: the environment variable "
         "TOOLCAP_TEST_UNSET_VARIABLE is not set"),
        (["--header-env", "Authorization=TOOLCAP_TEST_TWO_LINES"],
         "the value of Authorization holds a character no header value may"),
        (["--header-env", "Authorization=TOOLCAP_TEST_NOT_ASCII"],
         "--header-env Authorization=TOOLCAP_TEST_NOT_ASCII (from TOOLCAP_TEST_NOT_ASCII): "
         "the value of Authorization holds a character no header value may"),
        (["--header", "Authorization: Bearer t\u00f6ken"],
         "the value of Authorization holds a character no header value may"),
        (["--header-env", "X Key=TOOLCAP_TEST_TOKEN"], "its name 'X Key' holds a character"),
        (["--header", "X\u00e9: 1"], "its name 'X\u00e9' holds a character"),
        (["--header", "Authorization: x", "--header-env", "Authorization=TOOLCAP_TEST_TOKEN"],
         "the header 'Authorization' is given twice"),
        (["--header", "authorization: x", "--header-env", "Authorization=TOOLCAP_TEST_TOKEN"],
         "the header 'Authorization' is given twice (--header and --header-env"),
    ],
)
def test_a_bad_or_unset_header_env_is_a_one_line_usage_error(
    env: dict[str, str], args: list[str], message: str
) -> None:
    argv = args if "--" in args else ["--url", "http://127.0.0.1:9/mcp", *args]
    environment = {**env, "TOOLCAP_TEST_TWO_LINES": "Bearer a\r\nX-Evil: 1",
                   "TOOLCAP_TEST_TOKEN": "Bearer t", "TOOLCAP_TEST_NOT_ASCII": "Bearer t\u00f6ken"}
    done = subprocess.run(proxy_argv(*argv), stdin=subprocess.DEVNULL, capture_output=True,
                          env=environment, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert "t\u00f6ken" not in lines[0] and "X-Evil" not in lines[0]  # a value is never echoed
