"""Every message the proxy builds itself follows the client's protocol revision.

Each is checked with ``jsonschema`` against the JSON Schema of its type in the
official SDK's per-revision types (``mcp_types._v2025_11_25``,
``mcp_types._v2026_07_28``), read from the installed package, never copied. No
installed package ships the spec's own ``schema.json``; the SDK's types are
generated from it. Revisions before 2025-11-25 have no types of their own in the
SDK: their results are the 2025-11-25 ones without its later fields.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema")

from mcp_types import _v2025_11_25, _v2026_07_28  # noqa: E402

from proxy.proxy_helpers import (  # noqa: E402
    BIGSERVER,
    REF,
    SERVERS,
    RawProxy,
    base_env,
    proxy_argv,
    write_config,
)

CONFIG = '[tools."*"]\nsize_threshold = "32KB"\n'
REVISIONS: dict[str, ModuleType] = {"2025-11-25": _v2025_11_25, "2026-07-28": _v2026_07_28}


@pytest.fixture
def env(tmp_path: Path, artifacts: Path) -> dict[str, str]:
    return base_env(artifacts, write_config(tmp_path / "toolcap.toml", CONFIG))


def assert_valid(revision: str, type_name: str, result: Any) -> None:
    """``result`` is a valid ``type_name`` of ``revision``, by the SDK's JSON Schema of it."""
    model = getattr(REVISIONS[revision], type_name)
    schema = model.model_json_schema(by_alias=True)
    validator = jsonschema.Draft202012Validator(schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(result)]
    assert not errors, f"{type_name} of {revision}: {errors}"


class Session:
    """Raw requests to a proxy, spoken as ``revision`` would: 2026-07-28 names itself in
    every request's ``_meta`` and has no handshake; earlier revisions initialize."""

    def __init__(self, argv: list[str], env: dict[str, str], revision: str) -> None:
        self.raw = RawProxy(argv, env)
        self.revision = revision
        if revision == "2026-07-28":
            self.meta: dict[str, Any] = {
                "io.modelcontextprotocol/protocolVersion": revision,
                "io.modelcontextprotocol/clientInfo": {"name": "revision-test", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        else:
            self.meta = {}
            response = self.raw.request(
                "initialize",
                {
                    "protocolVersion": revision,
                    "capabilities": {},
                    "clientInfo": {"name": "revision-test", "version": "0"},
                },
            )
            assert response["result"]["protocolVersion"] == revision
            self.raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.meta:
            params["_meta"] = self.meta
        return self.raw.request(method, params)

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        response = self.request("tools/call", {"name": name, "arguments": arguments})
        result: dict[str, Any] = response["result"]
        return result


@pytest.mark.parametrize("revision", list(REVISIONS))
def test_the_proxys_own_tool_its_results_and_its_crash_errors_follow_the_revision(
    revision: str, env: dict[str, str]
) -> None:
    session = Session(proxy_argv("--", sys.executable, str(BIGSERVER)), env, revision)
    listed = session.request("tools/list")["result"]
    assert_valid(revision, "ListToolsResult", listed)
    ours = [tool for tool in listed["tools"] if tool["name"] == "read_artifact"]
    assert len(ours) == 1
    assert_valid(revision, "Tool", ours[0])

    cut = session.call("big_text", {"size": 300_000})
    assert_valid(revision, "CallToolResult", cut)
    ref = REF.search(cut["content"][-1]["text"])
    assert ref is not None
    read = session.call("read_artifact", {"ref": ref.group(0), "start_line": 2, "end_line": 3})
    assert "line 0000002 " in read["content"][0]["text"]
    assert_valid(revision, "CallToolResult", read)
    unknown = session.call("read_artifact", {"ref": "toolcap:nope"})
    assert unknown["isError"] is True
    assert_valid(revision, "CallToolResult", unknown)
    for result in (read, unknown):
        assert ("resultType" in result) == (revision == "2026-07-28")

    # A typed result no cut of which matches its kept schema: an error result, valid too.
    unmet = session.call("digest", {"size": 100_000})
    assert unmet["isError"] is True and "structuredContent" not in unmet
    assert_valid(revision, "CallToolResult", unmet)

    crashed = session.call("crash", {})
    assert crashed["isError"] is True
    assert "the upstream server exited" in crashed["content"][0]["text"]
    assert_valid(revision, "CallToolResult", crashed)
    assert session.raw.proc.wait(timeout=30) == 1


@pytest.mark.parametrize("revision", list(REVISIONS))
def test_the_note_for_an_oversized_message_follows_the_revision(
    revision: str, env: dict[str, str]
) -> None:
    argv = proxy_argv("--max-line-size", "1MB", "--", sys.executable, str(BIGSERVER))
    session = Session(argv, env, revision)
    note = session.call("big_text", {"size": 3_000_000})
    assert REF.search(note["content"][0]["text"]) is not None
    assert_valid(revision, "CallToolResult", note)
    session.raw.close_stdin()
    assert session.raw.proc.wait(timeout=30) == 0


def test_a_tools_list_the_proxy_answers_itself_follows_the_revision(env: dict[str, str]) -> None:
    # Only a handshake tells the proxy that the upstream has no tools; the 2026
    # revision asks such a server's capabilities otherwise, and its tools/list
    # goes to the upstream. The per-request rule still holds for a client that
    # names 2026-07-28 on a request.
    revision = "2025-11-25"
    argv = proxy_argv("--", sys.executable, str(SERVERS / "resources_only.py"))
    session = Session(argv, env, revision)
    listed = session.request("tools/list")["result"]
    assert [tool["name"] for tool in listed["tools"]] == ["read_artifact"]
    assert_valid(revision, "ListToolsResult", listed)
    session.meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    listed = session.request("tools/list")["result"]
    assert_valid("2026-07-28", "ListToolsResult", listed)
    session.raw.close_stdin()
    assert session.raw.proc.wait(timeout=30) == 0
