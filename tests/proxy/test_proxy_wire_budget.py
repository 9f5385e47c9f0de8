"""The wire budget: with the model-facing caps lifted, the JSON of every tool result's
text the proxy emits still fits ``wire_budget``, and what it cut is kept."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    Client,
    base_env,
    load_bigserver,
    open_store,
    proxy_argv,
    write_config,
)

BUDGET = 64 * 1024

CONFIG = """
batch_ceiling = "unlimited"
wire_budget = "64KB"

[tools."*"]
size_threshold = "unlimited"
"""


@pytest.fixture(scope="module")
def client(
    portal: BlockingPortal, artifacts: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("wire")
    config = write_config(home / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    env = {**base_env(artifacts, config), "TOOLCAP_DEBUG_LOG": str(home / "debug.jsonl")}
    with Client(portal, argv, env, home / "stderr.log") as connected:
        connected.debug_log = home / "debug.jsonl"  # type: ignore[attr-defined]
        yield connected


def blocks_json(result: Any) -> list[dict[str, Any]]:
    return [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]


def json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def test_a_result_of_500001_cjk_characters_fits_the_wire_budget(
    client: Client, artifacts: Path
) -> None:
    result = client.call("cjk_text", {"chars": 500_001})
    blocks = blocks_json(result)
    assert len(blocks) == 1
    assert json_bytes(blocks[0]["text"]) <= BUDGET
    assert json_bytes(blocks) <= BUDGET
    # Only the wire projection cut it, and the original is still kept and named.
    (ref,) = REF.findall(blocks[0]["text"])
    kept = open_store(artifacts).read_bytes(ref).decode()
    assert kept == ("漢字かな交じり文" * 62_501)[:500_001]


def test_two_300000_byte_blocks_share_the_wire_budget_in_order(client: Client) -> None:
    result = client.call("many_blocks", {"count": 2, "size": 300_000})
    blocks = blocks_json(result)
    texts = [block["text"] for block in blocks]
    assert len(texts) == 3
    assert texts[0].startswith("b0 0000000") and texts[1].startswith("b1 0000000")
    assert texts[2] == "short tail block"
    assert all(json_bytes(text) <= BUDGET for text in texts)
    assert json_bytes(blocks) <= BUDGET
    # Equal shares; each cut keeps whole lines, so they differ by less than a line.
    line = json_bytes("b0 0000000 the quick brown fox jumps over the lazy dog\n")
    assert abs(json_bytes(texts[0]) - json_bytes(texts[1])) <= line


def test_a_result_within_the_wire_budget_is_untouched(client: Client) -> None:
    original = load_bigserver().numbered_text(40_000)
    result = client.call("big_text", {"size": 40_000})
    assert [block["text"] for block in blocks_json(result)] == [original]


def test_the_diagnostics_log_shows_the_wire_projection_without_the_content(
    client: Client,
) -> None:
    client.call("many_blocks", {"count": 2, "size": 300_000})
    log_path: Path = client.debug_log  # type: ignore[attr-defined]
    text = log_path.read_text()
    events = [json.loads(line) for line in text.splitlines()]
    stages = {event["stage"] for event in events}
    assert {"wire_projection", "written"} <= stages
    assert "b0 0000000" not in text and "many_blocks" not in text
