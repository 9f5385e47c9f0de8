"""Typed results through a real proxy over stdio: an output schema the cut can honour is
kept, and a cut ``structuredContent`` still validates against it (checked with the
jsonschema library, by the official SDK client and by the fastmcp client, whose
``result.data`` is typed again); any other schema is withheld."""

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
    proxy_argv,
    text_of,
    write_config,
)

jsonschema = pytest.importorskip("jsonschema")

KB = 1024
THRESHOLD = 16 * KB
CONFIG = f'[tools."*"]\nsize_threshold = "{THRESHOLD}"\n'


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("typed")
    write_config(home / "toolcap.toml", CONFIG)
    return home


@pytest.fixture(scope="module")
def env(home: Path) -> dict[str, str]:
    return base_env(home / "store", home / "toolcap.toml")


@pytest.fixture(scope="module")
def client(portal: BlockingPortal, home: Path, env: dict[str, str]) -> Iterator[Client]:
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, env, home / "stderr.log") as connected:
        yield connected


@pytest.fixture(scope="module")
def schemas(client: Client) -> dict[str, Any]:
    assert client.session is not None
    tools = client.run(client.session.list_tools).tools
    return {tool.name: tool.output_schema for tool in tools}


def json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def test_schemas_the_cut_can_honour_are_kept_and_others_withheld(schemas: dict[str, Any]) -> None:
    assert schemas["structured"] is not None and schemas["structured"]["title"] == "Report"
    assert schemas["listing"] is not None and "$defs" in schemas["listing"]
    assert schemas["pair"] is None  # prefixItems: a cut could break it
    assert schemas["big_text"] is not None  # the SDK's {"result": string} wrapper


def test_a_cut_report_validates_and_keeps_its_scalars(
    client: Client, schemas: dict[str, Any]
) -> None:
    # The SDK client itself validates structuredContent against the listed schema.
    result = client.call("structured", {"size": 200_000})
    structured = result.structured_content
    assert structured is not None
    jsonschema.Draft202012Validator(schemas["structured"]).validate(structured)
    assert json_bytes(structured) <= THRESHOLD
    assert structured["title"] == "report"
    assert structured["lines"] == load_bigserver().numbered_text(200_000, "rep").count("\n")
    assert structured["body"].startswith("rep 0000000 the quick")
    assert REF.search(structured["body"])
    assert sum(len(text.encode()) for text in text_of(result)) <= THRESHOLD
    assert any(REF.search(text) for text in text_of(result))


def test_a_cut_listing_keeps_whole_rows_from_both_ends_and_validates(
    client: Client, schemas: dict[str, Any]
) -> None:
    result = client.call("listing", {"count": 5000})
    structured = result.structured_content
    assert structured is not None
    jsonschema.Draft202012Validator(schemas["listing"]).validate(structured)
    assert json_bytes(structured) <= THRESHOLD
    rows = structured["rows"]
    assert rows[0]["id"] == 0 and rows[-1]["id"] == 4999 and len(rows) < 5000
    assert structured["total"] == 5000 and structured["next_cursor"] == "c2"
    # No note can stand among the rows (they must be objects): the root says it.
    assert "toolcap" in structured and REF.search(structured["toolcap"])


def test_the_cut_structured_original_reads_back_by_pointer(client: Client) -> None:
    result = client.call("listing", {"count": 5000})
    ref = REF.search(result.structured_content["toolcap"]).group(0)
    read = client.call("read_artifact", {"ref": ref, "pointer": "/rows/2500"})
    assert json.loads(text_of(read)[0])["id"] == 2500


def test_a_withheld_schema_tool_still_gets_bounded_structured_content(client: Client) -> None:
    result = client.call("pair", {"size": 100_000})
    structured = result.structured_content
    assert structured is not None and json_bytes(structured) <= THRESHOLD


def test_a_typed_result_no_cut_of_which_matches_its_schema_is_an_error_result(
    client: Client, schemas: dict[str, Any]
) -> None:
    # A pattern-constrained string is kept whole or not at all, so the schema is kept...
    assert schemas["digest"] is not None and "pattern" in json.dumps(schemas["digest"])
    # ...and a result over the limit has no cut that validates. The SDK client validates
    # every result that is not an error against the schema: this call must not raise.
    result = client.call("digest", {"size": 100_000})
    assert result.is_error and result.structured_content is None
    texts = text_of(result)
    assert texts[0].startswith("{") and REF.search(texts[0])  # the text twin, cut
    assert "structuredContent of 97.6 KB not sent" in texts[-1] and REF.search(texts[-1])
    assert "error result" in texts[-1] and "size_threshold" in texts[-1]
    assert all(text.strip() for text in texts)
    small = client.call("digest", {"size": 640})
    assert not small.is_error and small.structured_content is not None


def test_a_result_within_the_limit_is_untouched(client: Client) -> None:
    result = client.call("listing", {"count": 3})
    assert result.structured_content is not None
    assert len(result.structured_content["rows"]) == 3
    assert "toolcap/cut" not in (result.meta or {})


def test_the_fastmcp_client_gets_typed_data_from_a_cut_result(
    home: Path, env: dict[str, str]
) -> None:
    fastmcp = pytest.importorskip("fastmcp")
    import anyio
    from fastmcp.client.transports import StdioTransport

    argv = proxy_argv("--", sys.executable, str(BIGSERVER))

    async def go() -> tuple[Any, Any]:
        transport = StdioTransport(command=argv[0], args=argv[1:], env=env)
        async with fastmcp.Client(transport) as fast:
            report = await fast.call_tool("structured", {"size": 200_000})
            listing = await fast.call_tool("listing", {"count": 5000})
            unmet = await fast.call_tool("digest", {"size": 100_000}, raise_on_error=False)
            return report, listing, unmet

    report, listing, unmet = anyio.run(go)
    assert unmet.is_error and REF.search(unmet.content[-1].text)
    assert not isinstance(report.data, dict)
    assert report.data.title == "report"
    assert REF.search(report.data.body)
    assert not isinstance(listing.data, dict)
    assert listing.data.rows[0].id == 0 and listing.data.total == 5000


def test_a_typed_result_called_before_any_listing_is_cut_to_its_schema(
    portal: BlockingPortal, home: Path, env: dict[str, str]
) -> None:
    # A client may call a tool it has not listed through this proxy (it keeps its
    # list from an earlier connection): the proxy lists the tools itself first, so
    # the cut keeps to the schema the client then validates against (the SDK client
    # lists after such a call and validates the result it already has).
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, env, home / "unlisted.log") as fresh:
        result = fresh.call("listing", {"count": 5000})
        assert fresh.session is not None
        tools = fresh.run(fresh.session.list_tools).tools
    schema = next(tool.output_schema for tool in tools if tool.name == "listing")
    jsonschema.Draft202012Validator(schema).validate(result.structured_content)
    assert json_bytes(result.structured_content) <= THRESHOLD
