"""`toolcap proxy` in front of our own SDK server, with the SDK's ClientSession as client.

One proxy and one upstream serve the whole module.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal
from mcp_types import PromptReference

from helpers import reference_of
from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    Client,
    anyio,
    base_env,
    load_bigserver,
    open_store,
    proxy_argv,
    text_of,
    write_config,
)

THRESHOLD = 32 * 1024

CONFIG = """
batch_ceiling = "256KB"
wire_budget = "64KB"
media_threshold = "256KB"

[tools."*"]
size_threshold = "32KB"
strategy = "head_tail"
spill = true
"""


@pytest.fixture(scope="module")
def server() -> Any:
    return load_bigserver()


@pytest.fixture(scope="module")
def client(
    portal: BlockingPortal, artifacts: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("bigserver")
    config = write_config(home / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, base_env(artifacts, config), home / "stderr.log") as connected:
        yield connected


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def test_initialize_reports_the_upstream_server_info_and_instructions(client: Client) -> None:
    assert client.init.server_info.name == "bigserver"
    assert client.init.server_info.version == "1.0.0"
    assert client.init.instructions == "Test server for toolcap."
    assert client.init.capabilities.tools is not None
    assert client.init.capabilities.resources is not None


def test_the_upstream_stderr_passes_through_to_the_proxy_stderr(client: Client) -> None:
    assert "bigserver: serving on stdio" in client.stderr()


def test_tools_list_keeps_output_schemas_a_cut_honours_and_adds_read_artifact(
    client: Client,
) -> None:
    assert client.session is not None
    tools = client.run(client.session.list_tools).tools
    names = [tool.name for tool in tools]
    assert "structured" in names and "big_text" in names
    assert names[-1] == "read_artifact"
    schemas = {tool.name: tool.output_schema for tool in tools}
    assert schemas["structured"] is not None  # plain strings and an integer: honoured
    assert schemas["pair"] is None  # a tuple (prefixItems): withheld
    read_artifact = tools[-1]
    assert "toolcap:" in (read_artifact.description or "")
    assert read_artifact.input_schema["required"] == ["ref"]


def test_large_text_is_bounded_and_its_original_is_kept(
    client: Client, server: Any, artifacts: Path
) -> None:
    result = client.call("big_text", {"size": 2_000_000})
    (text,) = text_of(result)
    assert utf8(text) <= THRESHOLD
    original = server.numbered_text(2_000_000)
    assert text.startswith(original[:1000])
    assert text.endswith(original[-1000:])
    (ref,) = REF.findall(text)
    assert ref == reference_of(original.encode())
    assert open_store(artifacts).read_bytes(ref) == original.encode()
    # Its structuredContent, stored from the line's own bytes, is its compact JSON.
    structured = json.dumps({"result": original}, ensure_ascii=False, separators=(",", ":"))
    assert result.structured_content is not None
    assert open_store(artifacts).read_bytes(reference_of(structured.encode())) == (
        structured.encode())
    assert "big_text: sent " in client.stderr()
    assert "to the assistant (size_threshold)" in client.stderr()


def test_read_artifact_returns_identical_byte_and_line_ranges(client: Client, server: Any) -> None:
    original = server.numbered_text(2_000_000)
    ref = REF.findall(text_of(client.call("big_text", {"size": 2_000_000}))[0])[0]
    for offset, length in [(0, 100), (1_000_000, 4096), (1_999_990, 100)]:
        result = client.call("read_artifact", {"ref": ref, "offset": offset, "length": length})
        assert not result.is_error
        assert text_of(result)[0] == original[offset : offset + length]
    lines = original.splitlines(keepends=True)
    result = client.call("read_artifact", {"ref": ref, "start_line": 10, "end_line": 20})
    assert text_of(result)[0] == "".join(lines[9:20])
    # A reference prefix of 16 hex digits is enough.
    short = ref[: len("toolcap:") + 16]
    result = client.call("read_artifact", {"ref": short, "offset": 5, "length": 10})
    assert text_of(result)[0] == original[5:15]


def test_read_artifact_searches_with_context(client: Client) -> None:
    ref = REF.findall(text_of(client.call("big_text", {"size": 2_000_000}))[0])[0]
    result = client.call("read_artifact", {"ref": ref, "pattern": "line 0020000 ", "context": 1})
    found = text_of(result)[0].splitlines()
    line = "line 0020000 the quick brown fox jumps over the lazy dog"
    offset = len(line.encode()) * 20000 + 20000  # each line of the text has this length
    assert found == [
        "20000-line 0019999 the quick brown fox jumps over the lazy dog",
        f"20001:{offset}:{line}",
        "20002-line 0020001 the quick brown fox jumps over the lazy dog",
    ]
    assert "1 match" in text_of(result)[1] and "BYTE_OFFSET" in text_of(result)[1]


def test_read_artifact_output_is_bounded_too(client: Client) -> None:
    ref = REF.findall(text_of(client.call("big_text", {"size": 2_000_000}))[0])[0]
    result = client.call("read_artifact", {"ref": ref, "offset": 0, "length": 1_000_000})
    assert sum(utf8(text) for text in text_of(result)) <= THRESHOLD


def test_read_artifact_refuses_a_malformed_reference(client: Client) -> None:
    result = client.call("read_artifact", {"ref": "../../etc/passwd"})
    assert result.is_error
    assert "not an artifact reference" in text_of(result)[0]


def test_many_text_blocks_keep_their_number_and_order_and_share_the_budget(
    client: Client,
) -> None:
    result = client.call("many_blocks", {"count": 4, "size": 20_000})
    texts = text_of(result)
    assert len(texts) == 5
    for index, text in enumerate(texts[:4]):
        assert text.startswith(f"b{index} 0000000")
    assert texts[4] == "short tail block"
    sizes = [utf8(text) for text in texts[:4]]
    assert sum(sizes) + utf8(texts[4]) <= THRESHOLD
    assert max(sizes) - min(sizes) <= 100  # a common level, up to line snapping


def test_an_image_over_the_media_threshold_becomes_a_text_naming_its_artifact(
    client: Client, server: Any, artifacts: Path
) -> None:
    result = client.call("image", {"size": 400_000})
    assert [block.type for block in result.content] == ["text", "text", "text"]
    caption, replaced, done = text_of(result)
    assert (caption, done) == ("here is the image", "done")
    assert "image/png" in replaced and "520.8 KB" in replaced
    (ref,) = REF.findall(replaced)
    assert open_store(artifacts).read_bytes(ref) == server.payload(400_000, "image")
    assert "(media_threshold)" in client.stderr()


def test_a_small_image_passes_unchanged(client: Client, server: Any) -> None:
    result = client.call("image", {"size": 1000})
    image = result.content[1]
    assert image.type == "image"
    assert base64.b64decode(image.data) == server.payload(1000, "image")


def test_an_embedded_blob_over_the_media_threshold_is_replaced_and_links_pass(
    client: Client, artifacts: Path, server: Any
) -> None:
    result = client.call("embedded", {"size": 300_000, "blob": True})
    replaced, link = result.content
    assert replaced.type == "text"
    assert "file:///data.bin" in replaced.text
    (ref,) = REF.findall(replaced.text)
    assert open_store(artifacts).read_bytes(ref) == server.payload(300_000, "blob")
    assert link.type == "resource_link" and str(link.uri) == "file:///data.txt"


def test_an_embedded_text_resource_within_the_media_threshold_is_cut_in_place(
    client: Client,
) -> None:
    result = client.call("embedded", {"size": 100_000})
    resource, link = result.content
    assert resource.type == "resource"
    assert str(resource.resource.uri) == "file:///data.txt"
    assert utf8(resource.resource.text) <= THRESHOLD
    assert REF.search(resource.resource.text)
    assert link.type == "resource_link"


def test_structured_content_passes_within_budget_and_is_cut_by_structure(client: Client) -> None:
    small = client.call("structured", {"size": 200})
    assert small.structured_content is not None
    assert small.structured_content["title"] == "report"
    cut = client.call("structured", {"size": 200_000})
    assert cut.structured_content is not None
    assert cut.structured_content["title"] == "report"
    assert utf8(cut.structured_content["body"]) <= THRESHOLD
    assert not cut.is_error
    assert sum(utf8(text) for text in text_of(cut)) <= THRESHOLD


def test_error_results_are_bounded_and_stay_errors(client: Client) -> None:
    result = client.call("fail", {"size": 200_000})
    assert result.is_error
    (text,) = text_of(result)
    assert utf8(text) <= THRESHOLD
    assert REF.search(text)


def test_progress_and_log_notifications_pass_through(client: Client) -> None:
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    result = client.call("slow", {"steps": 5}, progress_callback=on_progress)
    assert text_of(result) == ["did 5 steps"]
    assert progress == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    assert "slow finished" in [str(entry) for entry in client.logs]


def test_list_changed_and_resource_updated_notifications_pass_through(client: Client) -> None:
    assert client.session is not None
    session = client.session
    wanted = {"notifications/tools/list_changed", "notifications/resources/updated"}

    async def announce_and_wait() -> None:
        await session.call_tool("announce", {})
        with anyio.fail_after(20):
            while not wanted <= set(client.notified):
                client.notice_arrived = arrived = anyio.Event()
                if wanted <= set(client.notified):
                    break
                await arrived.wait()

    client.run(announce_and_wait)
    assert wanted <= set(client.notified)


def test_a_cancelled_call_is_cancelled_upstream(client: Client) -> None:
    assert client.session is not None
    session = client.session

    async def call_then_give_up() -> None:
        with anyio.move_on_after(1):
            await session.call_tool("block", {"token": "t1"})

    client.run(call_then_give_up)
    assert text_of(client.call("was_cancelled", {"token": "t1"})) == ["cancelled"]


def test_sampling_roots_and_elicitation_requests_from_the_upstream_reach_the_client(
    client: Client,
) -> None:
    result = client.call("sample", {"prompt": "what is six times seven?"})
    assert text_of(result) == ["sampled: forty-two"]
    assert client.sampled == ["what is six times seven?"]
    assert text_of(client.call("roots")) == ["file:///tmp/root-a"]
    assert text_of(client.call("ask")) == ["accept: teal"]
    assert client.elicited == ["Which colour?"]


def test_resources_read_is_bounded_and_other_methods_pass_through(client: Client) -> None:
    assert client.session is not None
    session = client.session
    big = client.run(session.read_resource, "big://text/500000")
    (content,) = big.contents
    assert utf8(content.text) <= THRESHOLD
    assert REF.search(content.text)
    small = client.run(session.read_resource, "small://hello")
    assert small.contents[0].text == "hello resource"
    assert [str(r.uri) for r in client.run(session.list_resources).resources] == ["small://hello"]
    templates = client.run(session.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == ["big://text/{size}"]
    prompts = client.run(session.list_prompts).prompts
    assert [p.name for p in prompts] == ["greet", "big_prompt", "many_messages"]
    prompt = client.run(session.get_prompt, "greet", {"name": "Ada"})
    assert "Ada" in prompt.messages[0].content.text
    client.run(session.send_ping)
    completion = client.run(
        session.complete, PromptReference(name="greet"), {"name": "name", "value": "A"}
    )
    assert completion.completion.values == ["Ada", "Alan"]


def test_a_malformed_upstream_line_is_reported_and_later_calls_work(client: Client) -> None:
    assert text_of(client.call("garbage")) == ["after garbage"]
    assert any("malformed" in str(entry) for entry in client.logs)
    assert "malformed message from the upstream server" in client.stderr()
    assert text_of(client.call("small", {"text": "still fine"})) == ["still fine"]


def test_a_malformed_response_fails_only_its_own_call(client: Client) -> None:
    result = client.call("broken_reply")
    assert result.is_error
    assert "malformed response" in text_of(result)[0]
    assert text_of(client.call("small", {"text": "next"})) == ["next"]


def test_bytes_that_are_not_utf8_in_a_result_become_replacement_characters(
    client: Client,
) -> None:
    result = client.call("bad_utf8")
    assert text_of(result) == ["bad \ufffd\ufffd bytes"]


def test_a_client_on_the_2026_stateless_protocol_is_relayed_and_bounded(
    portal: BlockingPortal, artifacts: Path, tmp_path: Path
) -> None:
    from mcp import Client as SdkClient
    from mcp import StdioServerParameters, stdio_client

    config = write_config(tmp_path / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=base_env(artifacts, config))

    async def go() -> tuple[str | None, list[str], list[str]]:
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with SdkClient(stdio_client(params, errlog=errlog), mode="auto") as sdk:
                tools = await sdk.list_tools()
                result = await sdk.call_tool("big_text", {"size": 500_000})
                return (
                    sdk.session.protocol_version,
                    [tool.name for tool in tools.tools],
                    text_of(result),
                )

    version, names, texts = portal.call(go)
    assert version == "2026-07-28"
    assert names[-1] == "read_artifact"
    assert utf8(texts[0]) <= THRESHOLD
    assert REF.search(texts[0])


def test_a_catastrophic_pattern_neither_hangs_nor_blocks_another_call(
    client: Client, artifacts: Path
) -> None:
    hostile = b"a" * 34 + b"!\n" + b'{"k": "' + b"a" * 5_000_000 + b'!"}\n'
    ref = open_store(artifacts).put(hostile)
    assert client.session is not None
    session = client.session
    results: dict[str, Any] = {}

    async def both() -> None:
        async def search() -> None:
            results["search"] = await session.call_tool(
                "read_artifact", {"ref": ref, "pattern": "(a+)+$"})

        async def other() -> None:
            results["other"] = await session.call_tool(
                "read_artifact", {"ref": ref, "offset": 0, "length": 10})

        async with anyio.create_task_group() as group:
            group.start_soon(search)
            group.start_soon(other)

    client.run(both)
    assert not results["search"].is_error
    # No match: the note is the only block (an empty text block is refused by model APIs).
    assert len(text_of(results["search"])) == 1
    assert "0 matches" in text_of(results["search"])[0]
    assert text_of(results["other"])[0] == "a" * 10
    refused = client.call("read_artifact", {"ref": ref, "pattern": r"(a)\1"})
    assert refused.is_error
    assert "not supported" in text_of(refused)[0] and "linear time" in text_of(refused)[0]


def test_a_match_in_a_one_line_json_is_a_window_with_its_offset(
    client: Client, artifacts: Path
) -> None:
    line = b'{"k": "' + b"x" * 3_000_000 + b"NEEDLE" + b"x" * 3_000_000 + b'"}'
    ref = open_store(artifacts).put(line)
    result = client.call("read_artifact", {"ref": ref, "pattern": "NEEDLE"})
    (row,) = text_of(result)[0].splitlines()
    offset = line.index(b"NEEDLE")
    assert row.startswith(f"1:{offset}:[...] xxx") and row.endswith("xxx [...]")
    assert "NEEDLE" in row and len(row) < 2100
    assert "1 match" in text_of(result)[1]
    again = client.call("read_artifact", {"ref": ref, "offset": offset, "length": 6})
    assert text_of(again)[0] == "NEEDLE"
