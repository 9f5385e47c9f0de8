"""Replies a host can forward to a model API as they are: no empty text block (in a cut
result or in what read_artifact answers), and each tool says the bound toolcap enforces
on its results."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import BIGSERVER, REF, Client, base_env, proxy_argv, write_config

CONFIG = '[tools."*"]\nsize_threshold = "32KB"\n[tools.small]\nsize_threshold = "4KB"\n'


@pytest.fixture(scope="module")
def client(portal: BlockingPortal, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("forwardable")
    config = write_config(home / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, base_env(home / "store", config), home / "stderr.log") as connected:
        yield connected


@pytest.mark.parametrize(("count", "size"), [(500, 1000), (500, 70), (3, 40_000)])
def test_a_cut_result_never_holds_an_empty_text_block(
    client: Client, count: int, size: int
) -> None:
    result = client.call("many_blocks", {"count": count, "size": size})
    texts = [block.text for block in result.content if block.type == "text"]
    assert len(texts) == len(result.content)
    assert all(text.strip() for text in texts), [i for i, t in enumerate(texts) if not t.strip()]
    assert any(REF.search(text) for text in texts)
    assert texts[0].startswith("b0 0000000 the quick")


def tool_bounds(client: Client) -> dict[str, object]:
    assert client.session is not None
    listed = client.run(client.session.list_tools)
    key = "anthropic/maxResultSizeChars"
    return {tool.name: (tool.meta or {}).get(key) for tool in listed.tools}


def test_each_tool_advertises_the_bound_toolcap_enforces_on_its_results(client: Client) -> None:
    bounds = tool_bounds(client)
    assert bounds["big_text"] == 32 * 1024
    assert bounds["small"] == 4 * 1024
    assert bounds["read_artifact"] == 32 * 1024
    big = client.call("big_text", {"size": 200_000})
    assert len("".join(getattr(b, "text", "") for b in big.content)) <= 32 * 1024


def the_reference_of_a_cut(client: Client) -> str:
    result = client.call("big_text", {"size": 100_000})
    found = REF.search("".join(getattr(block, "text", "") for block in result.content))
    assert found is not None
    return found.group(0)


@pytest.mark.parametrize("arguments", [
    {"pattern": "no such text anywhere"},          # a search with no match
    {"start_line": 5, "end_line": 2},              # an empty line range
    {"start_line": 10**9},                         # lines past the end
    {"offset": 100_000},                           # a byte range at the very end
    {"pointer": "/x"},                             # an error result
])
def test_read_artifact_never_answers_an_empty_text_block(
    client: Client, arguments: dict[str, object]
) -> None:
    ref = the_reference_of_a_cut(client)
    result = client.call("read_artifact", {"ref": ref, **arguments})
    texts = [block.text for block in result.content if block.type == "text"]
    assert texts and len(texts) == len(result.content)
    assert all(text.strip() for text in texts), texts
    assert texts[-1].startswith(("[", "read_artifact:")), texts
