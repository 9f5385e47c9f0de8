"""A message over max_line_size is never held: it is streamed to the store, and the call
it answers gets a note naming the artifact (real servers, Python and Node.js SDKs)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    RawProxy,
    base_env,
    load_bigserver,
    open_store,
    proxy_argv,
    write_config,
)

NOISY = Path(__file__).resolve().parents[1] / "npm" / "servers" / "noisy-server.mjs"
CONFIG = '[tools."*"]\nsize_threshold = "32KB"\n'


@pytest.fixture
def env(tmp_path: Path, artifacts: Path) -> dict[str, str]:
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", CONFIG))


def call(raw: RawProxy, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return raw.request("tools/call", {"name": name, "arguments": arguments})


def stored_message(artifacts: Path, text: str) -> dict[str, object]:
    refs = REF.findall(text)
    assert len(refs) == 1, text
    return dict(json.loads(open_store(artifacts).read_bytes(refs[0])))


def test_a_message_over_max_line_size_is_kept_whole_and_its_call_gets_a_note(
    env: dict[str, str], artifacts: Path
) -> None:
    raw = RawProxy(proxy_argv("--max-line-size", "1MB", "--", sys.executable, str(BIGSERVER)),
                   env)
    raw.initialize()
    answer = call(raw, "big_text", {"size": 3_000_000})
    result = answer["result"]
    assert isinstance(result, dict)
    text = result["content"][0]["text"]
    assert "over max_line_size (1.0 MB)" in text and "read_artifact" in text
    # The artifact is the server's message as it was sent: the whole result is in it.
    message = stored_message(artifacts, text)
    assert message["id"] == answer["id"]
    kept = message["result"]["content"][0]["text"]  # type: ignore[index]
    assert kept == load_bigserver().numbered_text(3_000_000, "line")
    # Smaller results still go through the usual bound, and the proxy goes on.
    small = call(raw, "big_text", {"size": 100_000})
    assert REF.search(small["result"]["content"][0]["text"])  # type: ignore[index]
    raw.close_stdin()
    assert raw.proc.wait(timeout=30) == 0
    assert "over max_line_size (1.0 MB); the whole message is kept as toolcap:" in (
        raw.stderr_text())


def test_max_line_size_is_read_from_the_configuration(
    tmp_path: Path, artifacts: Path
) -> None:
    config = write_config(tmp_path / "toolcap.toml", 'max_line_size = "512KB"\n' + CONFIG)
    raw = RawProxy(proxy_argv("--", sys.executable, str(BIGSERVER)), base_env(artifacts, config))
    raw.initialize()
    text = call(raw, "big_text", {"size": 600_000})["result"]["content"][0]["text"]  # type: ignore[index]
    assert "over max_line_size (512.0 KB)" in text
    raw.close_stdin()
    raw.proc.wait(timeout=30)


@pytest.mark.skipif(shutil.which("node") is None or not NOISY.exists(), reason="needs node")
def test_a_node_servers_long_response_with_its_id_last_still_reaches_its_call(
    env: dict[str, str], artifacts: Path
) -> None:
    # The TypeScript SDK writes {"result": ..., "jsonrpc": "2.0", "id": N}.
    raw = RawProxy(proxy_argv("--max-line-size", "1MB", "--", "node", str(NOISY)), env)
    raw.initialize()
    answer = call(raw, "burst", {"tag": "t", "lines": 0, "size": 2_000_000})
    text = answer["result"]["content"][0]["text"]  # type: ignore[index]
    assert "over max_line_size (1.0 MB)" in text
    message = stored_message(artifacts, text)
    assert len(message["result"]["content"][0]["text"]) == 2_000_000  # type: ignore[index]
    raw.close_stdin()
    raw.proc.wait(timeout=30)


def test_a_bad_max_line_size_is_a_one_line_usage_error(env: dict[str, str]) -> None:
    raw = RawProxy(proxy_argv("--max-line-size", "lots", "--", sys.executable, str(BIGSERVER)),
                   env)
    assert raw.proc.wait(timeout=30) == 2
    err = raw.stderr_text().strip()
    assert "--max-line-size" in err and len(err.splitlines()) == 1


def test_a_long_request_from_the_server_is_not_taken_for_the_answer_to_a_call(
    env: dict[str, str]
) -> None:
    # The server's request carries the id of the client's waiting call: it is kept and
    # said, and the call still gets its real answer.
    server = Path(__file__).resolve().parents[1] / "servers" / "long_request_server.py"
    raw = RawProxy(proxy_argv("--max-line-size", "1MB", "--", sys.executable, str(server)),
                   env)
    raw.initialize()
    answer = call(raw, "anything", {})
    assert answer["result"]["content"][0]["text"] == "the real answer"  # type: ignore[index]
