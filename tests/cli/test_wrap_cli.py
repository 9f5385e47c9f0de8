"""`toolcap wrap`: real-shaped configuration files of each MCP client, wrapped, checked,
wrapped again (no change), undone (byte-identical), and a wrapped entry really run."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from helpers import TOOLCAP, Toolcap

DATA = Path(__file__).resolve().parents[1] / "data" / "wrap"
SERVERS = Path(__file__).resolve().parents[1] / "servers"

# Each client's file, and what its servers become: name -> argv after the executable.
CLIENTS = {
    "claude-desktop/claude_desktop_config.json": {
        "filesystem": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem",
                       "/Users/me/Desktop", "/Users/me/Downloads"],
        "github": ["proxy", "--", "docker", "run", "-i", "--rm", "-e",
                   "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
    },
    "claude-code/.mcp.json": {
        "git": ["proxy", "--", "uvx", "mcp-server-git", "--repository", "${CLAUDE_PROJECT_DIR:-.}"],
        "sentry": ["proxy", "--url", "https://mcp.sentry.dev/mcp",
                   "--header-env", "Authorization=TOOLCAP_HEADER_AUTHORIZATION"],
    },
    "claude-code/.claude.json": {
        "postgres": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-postgres",
                     "postgresql://localhost/app"],
        "memory": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-memory"],
    },
    "cursor/mcp.json": {
        "context7": ["proxy", "--url", "https://mcp.context7.com/mcp",
                     "--header-env", "CONTEXT7_API_KEY=TOOLCAP_HEADER_CONTEXT7_API_KEY"],
        "playwright": ["proxy", "--", "npx", "@playwright/mcp@latest"],
    },
    "vscode/.vscode/mcp.json": {
        "github": ["proxy", "--url", "https://api.githubcopilot.com/mcp/",
                   "--header-env", "Authorization=TOOLCAP_HEADER_AUTHORIZATION"],
        "fetch": ["proxy", "--", "uvx", "mcp-server-fetch"],
    },
    "windsurf/mcp_config.json": {
        "github": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-github"],
        "figma": ["proxy", "--url", "https://mcp.figma.com/mcp",
                  "--header-env", "Authorization=TOOLCAP_HEADER_AUTHORIZATION"],
    },
    "gemini/.gemini/settings.json": {
        "git": ["proxy", "--", "uvx", "mcp-server-git"],
        "github": ["proxy", "--url", "https://api.githubcopilot.com/mcp/",
                   "--header-env", "Authorization=TOOLCAP_HEADER_AUTHORIZATION"],
    },
}


def copy_client(name: str, home: Path) -> Path:
    target = home / "client" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / name, target)
    return target


def strip_jsonc(text: str) -> str:
    """VS Code's fixture has a comment and a trailing comma: drop them for json.loads."""
    lines = [line for line in text.splitlines() if not line.strip().startswith("//")]
    return "\n".join(lines).replace('",\n\t\t}', '"\n\t\t}')


def servers_of(path: Path) -> dict[str, dict[str, object]]:
    data = json.loads(strip_jsonc(path.read_text(encoding="utf-8")))
    found: dict[str, dict[str, object]] = {}
    for project in data.get("projects", {}).values():
        found.update(project.get("mcpServers", {}))
    found.update(data.get("mcpServers", {}))
    found.update(data.get("servers", {}))
    return found


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_each_clients_servers_start_through_the_proxy_and_all_else_is_kept(
    toolcap: Toolcap, name: str
) -> None:
    path = copy_client(name, toolcap.home)
    before = servers_of(path)
    done = toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    assert done.returncode == 0, done.stderr
    after = servers_of(path)
    assert list(after) == list(before)  # same servers, same order
    for server, argv in CLIENTS[name].items():
        assert after[server]["command"] == TOOLCAP
        assert after[server]["args"] == argv
        kept = {k: v for k, v in before[server].items()
                if k not in ("command", "args", "url", "serverUrl", "httpUrl", "headers", "type")}
        assert {k: after[server][k] for k in kept} == kept  # env, cwd, timeout...
        # A remote server's header values move to its env (where the client still
        # expands ${VAR} in them), named by --header-env: no secret in its arguments.
        headers = before[server].get("headers", {})
        assert isinstance(headers, dict)
        named = dict(arg.split("=", 1) for arg in argv[4::2]) if "--url" in argv else {}
        assert {name: after[server]["env"][var] for name, var in named.items()} == headers
        assert not any(value in arg for value in headers.values() for arg in argv)
        if "type" in before[server]:
            assert after[server]["type"] == "stdio"
    original = (DATA / name).read_text(encoding="utf-8")
    wrapped = path.read_text(encoding="utf-8")
    assert wrapped.endswith("\n") and wrapped.count("\n") >= original.count("\n") - 4
    backup = path.with_name(path.name + ".bak")
    assert backup.read_bytes() == (DATA / name).read_bytes()


def test_everything_outside_the_wrapped_entries_is_kept_byte_for_byte(toolcap: Toolcap) -> None:
    path = copy_client("claude-code/.claude.json", toolcap.home)
    toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    original = (DATA / "claude-code/.claude.json").read_text()
    wrapped = path.read_text()
    head = original[: original.index('"mcpServers"')]
    tail = original[original.rindex('"hasCompletedOnboarding"'):]
    assert wrapped.startswith(head) and wrapped.endswith(tail)


def test_comments_and_trailing_commas_of_vscode_jsonc_are_kept(toolcap: Toolcap) -> None:
    path = copy_client("vscode/.vscode/mcp.json", toolcap.home)
    toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    text = path.read_text()
    assert text.startswith("{\n\t// Servers for this workspace")
    assert '\t\t"github": {\n\t\t\t"type": "stdio",\n\t\t\t"command": ' in text


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_wrapping_twice_changes_nothing(toolcap: Toolcap, name: str) -> None:
    path = copy_client(name, toolcap.home)
    toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    once = path.read_bytes()
    records = path.with_name(path.name + ".toolcap.json").read_bytes()
    again = toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    assert again.returncode == 0
    assert "already wrapped" in again.stderr.decode() and "unchanged" in again.stderr.decode()
    assert path.read_bytes() == once
    assert path.with_name(path.name + ".toolcap.json").read_bytes() == records
    assert not path.with_name(path.name + ".bak.1").exists()  # no second backup


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_undo_restores_the_original_file_byte_for_byte(toolcap: Toolcap, name: str) -> None:
    path = copy_client(name, toolcap.home)
    toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    done = toolcap("wrap", str(path), "--undo")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == (DATA / name).read_bytes()
    assert not path.with_name(path.name + ".toolcap.json").exists()


def test_undo_restores_entries_and_keeps_what_the_client_changed_since(
    toolcap: Toolcap,
) -> None:
    path = copy_client("claude-code/.claude.json", toolcap.home)
    toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    # Claude Code rewrites this file all the time: a counter moves meanwhile.
    path.write_text(path.read_text().replace('"numStartups": 42', '"numStartups": 43'))
    toolcap("wrap", str(path), "--undo")
    original = (DATA / "claude-code/.claude.json").read_text()
    assert path.read_text() == original.replace('"numStartups": 42', '"numStartups": 43')


def test_undo_leaves_an_entry_the_user_changed_since_and_says_so(toolcap: Toolcap) -> None:
    path = copy_client("cursor/mcp.json", toolcap.home)
    toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    # The user adds an argument to the wrapped server, then undoes the wrap.
    data = json.loads(path.read_text(encoding="utf-8"))
    data["mcpServers"]["playwright"]["args"].append("--headless")
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    done = toolcap("wrap", str(path), "--undo")
    assert done.returncode == 0, done.stderr
    assert "skipped playwright: changed since it was wrapped" in done.stderr.decode()
    after = servers_of(path)
    assert after["playwright"]["args"][-1] == "--headless"  # the change is not lost
    assert after["context7"] == servers_of(DATA / "cursor/mcp.json")["context7"]
    records = json.loads(path.with_name(path.name + ".toolcap.json").read_text())
    assert list(records["entries"]) == ["/mcpServers/playwright"]


def test_server_limits_the_change_to_the_named_servers_and_undo_follows(
    toolcap: Toolcap,
) -> None:
    path = copy_client("cursor/mcp.json", toolcap.home)
    toolcap("wrap", str(path), "--server", "playwright", "--toolcap", TOOLCAP)
    assert servers_of(path)["context7"] == servers_of(DATA / "cursor/mcp.json")["context7"]
    toolcap("wrap", str(path), "--server", "context7", "--toolcap", TOOLCAP)
    toolcap("wrap", str(path), "--undo", "--server", "playwright")
    assert servers_of(path)["playwright"] == servers_of(DATA / "cursor/mcp.json")["playwright"]
    assert servers_of(path)["context7"]["command"] == TOOLCAP
    toolcap("wrap", str(path), "--undo")
    assert path.read_bytes() == (DATA / "cursor/mcp.json").read_bytes()


def test_the_executable_defaults_to_the_absolute_path_of_this_toolcap(toolcap: Toolcap) -> None:
    path = copy_client("cursor/mcp.json", toolcap.home)
    assert toolcap("wrap", str(path)).returncode == 0
    assert servers_of(path)["playwright"]["command"] == str(Path(TOOLCAP).absolute())


def test_hundreds_of_servers_are_summed_up_in_a_few_lines(toolcap: Toolcap) -> None:
    path = toolcap.home / "mcp.json"
    servers = {f"s{i}": {"command": "srv", "args": [str(i)]} for i in range(300)}
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    done = toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    first, last = done.stderr.decode().splitlines()
    assert first == ("toolcap wrap: wrapped: s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 and 290 "
                     "more")
    assert last.startswith("toolcap wrap: updated ")
    assert all(entry["command"] == TOOLCAP for entry in servers_of(path).values())


def test_dry_run_prints_a_unified_diff_and_writes_nothing(toolcap: Toolcap) -> None:
    path = copy_client("claude-desktop/claude_desktop_config.json", toolcap.home)
    done = toolcap("wrap", str(path), "--dry-run", "--toolcap", TOOLCAP)
    assert done.returncode == 0
    diff = done.stdout.decode()
    assert diff.startswith(f"--- {path}\n+++ {path} (wrapped)\n@@ ")
    assert '-      "command": "npx",\n' in diff
    assert f'+      "command": "{TOOLCAP}",\n' in diff
    assert path.read_bytes() == (DATA / "claude-desktop/claude_desktop_config.json").read_bytes()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_what_cannot_go_through_the_proxy_is_skipped_with_the_reason(toolcap: Toolcap) -> None:
    path = copy_client("gemini/.gemini/settings.json", toolcap.home)
    done = toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    assert ("toolcap wrap: skipped legacy: SSE transport: toolcap proxy --url speaks "
            "Streamable HTTP only") in done.stderr.decode().splitlines()
    assert servers_of(path)["legacy"] == {"url": "http://localhost:8080/sse"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "not JSON: expected a JSON value, found 'n' at line 1 column 1"),
        ('{"mcpServers": {"a": {"command": "x"}',
         "not JSON: expected ',' or '}', found the end of the text at line 1"),
        ("[1, 2]", "not an MCP client configuration: the top level is not an object"),
        ('{"theme": "Dracula"}', "no MCP servers: expected mcpServers"),
        ('{"mcpServers": []}', "mcpServers is not an object of servers"),
        ('{"mcpServers": {}}', "no servers to wrap: the server list is empty"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(toolcap: Toolcap, content: str, message: str) -> None:
    path = toolcap.home / "mcp.json"
    path.write_text(content)
    done = toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    assert done.returncode == 2
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith(f"toolcap: error: {path}: {message}")
    assert path.read_text() == content


def test_an_unknown_server_name_or_file_is_one_line_and_exit_2(toolcap: Toolcap) -> None:
    path = copy_client("cursor/mcp.json", toolcap.home)
    done = toolcap("wrap", str(path), "--server", "nope", "--toolcap", TOOLCAP)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"toolcap: error: {path}: no server named 'nope' (servers: context7, playwright)"]
    missing = toolcap("wrap", str(toolcap.home / "absent.json"))
    assert missing.returncode == 2
    assert missing.stderr.decode().splitlines() == [
        f"toolcap: error: {toolcap.home / 'absent.json'}: no such file"]


@pytest.mark.parametrize("record", ["[]", '"text"', '{"format": "other/1", "entries": {}}',
                                    '{"format": "toolcap-wrap/1", "entries": []}'])
def test_a_record_file_that_is_not_a_wrap_record_is_one_line_and_exit_2(
    toolcap: Toolcap, record: str
) -> None:
    path = copy_client("cursor/mcp.json", toolcap.home)
    records = path.with_name(path.name + ".toolcap.json")
    records.write_text(record)
    done = toolcap("wrap", str(path), "--toolcap", TOOLCAP)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"toolcap: error: {records}: not a toolcap wrap record (toolcap-wrap/1)"]
    assert path.read_bytes() == (DATA / "cursor/mcp.json").read_bytes()


def test_a_wrapped_stdio_entry_really_serves_through_the_proxy(toolcap: Toolcap) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    path = toolcap.home / "claude_desktop_config.json"
    entry = {"command": sys.executable, "args": [str(SERVERS / "bigserver.py")],
             "env": {"TOOLCAP_ARTIFACTS": str(toolcap.artifacts)}}
    path.write_text(json.dumps({"mcpServers": {"big": entry}}, indent=2) + "\n")
    assert toolcap("wrap", str(path), "--toolcap", TOOLCAP).returncode == 0
    wrapped = json.loads(path.read_text())["mcpServers"]["big"]
    assert wrapped["command"] == TOOLCAP and wrapped["env"] == entry["env"]

    async def call() -> tuple[list[str], str]:
        params = StdioServerParameters(command=wrapped["command"], args=wrapped["args"],
                                       env={**toolcap.env, **wrapped["env"]})
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                result = await session.call_tool("big_text", {"size": 3_000_000})
                return tools, result.content[0].text  # type: ignore[union-attr]

    tools, text = anyio.run(call)
    assert tools[-1] == "read_artifact"
    assert len(text.encode()) < 64 * 1024 and "toolcap:" in text


def test_a_wrapped_http_entry_sends_its_headers_from_the_env_not_the_arguments(
    toolcap: Toolcap,
) -> None:
    pytest.importorskip("mcp")
    from proxy.proxy_helpers import RawProxy, StubHandler, loopback_http

    class Upstream(StubHandler):
        """Answers initialize with the Authorization header it was sent as its name."""

        def do_POST(self) -> None:
            message = self.message()
            if "id" not in message:
                self.answer(202)
                return
            info = {"name": self.headers.get("authorization", "none"), "version": "1"}
            result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": info}
            self.answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                         "result": result}).encode(), "application/json")

    with loopback_http(Upstream) as port:
        path = toolcap.home / "mcp.json"
        entry = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp",
                 "headers": {"Authorization": "Bearer wrap-secret-42"}}
        path.write_text(json.dumps({"mcpServers": {"remote": entry}}, indent=2) + "\n")
        assert toolcap("wrap", str(path), "--toolcap", TOOLCAP).returncode == 0
        wrapped = servers_of(path)["remote"]
        args, env = wrapped["args"], wrapped["env"]
        assert isinstance(args, list) and isinstance(env, dict)
        assert not any("wrap-secret-42" in arg for arg in args)
        proxy = RawProxy([str(wrapped["command"]), *args], {**toolcap.env, **env})
        try:
            answer = proxy.initialize()
        finally:
            proxy.close_stdin()
            assert proxy.proc.wait(timeout=60) == 0
    assert answer["result"]["serverInfo"]["name"] == "Bearer wrap-secret-42"
