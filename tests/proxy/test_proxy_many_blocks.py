"""Thousands of blocks through the real proxy: stored once, named, readable back."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

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
    text_of,
    write_config,
)

WIRE = 64 * 1024


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("many-blocks-store")


@pytest.fixture(scope="module")
def client(
    portal: BlockingPortal, store_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("many-blocks")
    config = write_config(home / "toolcap.toml", "# the defaults: 32KB, 256KB, 64KB on the wire\n")
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, base_env(store_dir, config), home / "stderr.log") as connected:
        yield connected


def expected_texts(count: int, size: int) -> list[str]:
    server = load_bigserver()
    return [server.numbered_text(size, f"b{i}") for i in range(count)] + ["short tail block"]


def stored_refs(store_dir: Path) -> set[str]:
    return {info.ref for info in open_store(store_dir).list_artifacts()}


def call_and_measure(client: Client, count: int, size: int) -> tuple[list[str], float]:
    start = time.perf_counter()
    result = client.call("many_blocks", {"count": count, "size": size})
    elapsed = time.perf_counter() - start
    assert not result.is_error
    texts = text_of(result)
    serialized = json.dumps([{"type": "text", "text": t} for t in texts],
                            ensure_ascii=False, separators=(",", ":"))
    assert len(serialized.encode()) <= WIRE
    return texts, elapsed


def test_4000_blocks_under_the_threshold_arrive_whole_as_one_block(
    client: Client, store_dir: Path
) -> None:
    # 4,001 blocks, 27 KB of text: within every cap but the wire's, which cannot hold
    # 4,001 block structures. Joined, the text fits: the model reads all of it.
    before = stored_refs(store_dir)
    texts, elapsed = call_and_measure(client, 4000, 6)
    assert texts == ["\n".join(expected_texts(4000, 6))]
    assert stored_refs(store_dir) == before
    print(f"\n4,001 blocks through the proxy in {elapsed:.2f} s")


def test_10000_blocks_over_the_threshold_are_stored_once_named_and_readable(
    client: Client, store_dir: Path
) -> None:
    before = stored_refs(store_dir)
    texts, elapsed = call_and_measure(client, 10_000, 20)
    whole = "\n".join(expected_texts(10_000, 20))
    (reference,) = {ref for text in texts for ref in REF.findall(text)}
    assert stored_refs(store_dir) - before == {reference}
    assert open_store(store_dir).read_bytes(reference) == whole.encode()
    assert len("\n".join(texts).encode()) <= 32 * 1024
    assert texts[0].startswith("b0 0000000 the quick\nb1 0000000 the quick\n")
    # The model can read any of it back through the proxy's own tool.
    read = client.call("read_artifact", {"ref": reference, "start_line": 5000, "end_line": 5001})
    assert "b4999 0000000" in text_of(read)[0] and "b5000 0000000" in text_of(read)[0]
    print(f"\n10,001 blocks through the proxy in {elapsed:.2f} s")
