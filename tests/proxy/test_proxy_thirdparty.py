"""`toolcap proxy` in front of third-party MCP servers, pinned in tests/npm and the test extra:
@modelcontextprotocol/server-filesystem, @modelcontextprotocol/server-everything and
mcp-server-git. Each upstream is started once for its tests.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from helpers import reference_of
from proxy.proxy_helpers import (
    NPM_BIN,
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
CONFIG = '[tools."*"]\nsize_threshold = "32KB"\n'

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (NPM_BIN / "mcp-server-filesystem").exists(),
    reason="npm test servers not installed: run `npm ci --prefix tests/npm`",
)
# mcp-server-git lives in a venv of its own (tests/requirements-servers.txt).
GIT_SERVER = Path(__file__).resolve().parents[1] / ".venv-servers" / "bin" / "mcp-server-git"
GIT_COMMAND = [str(GIT_SERVER)] if GIT_SERVER.exists() else [sys.executable, "-m", "mcp_server_git"]
needs_git_server = pytest.mark.skipif(
    shutil.which("git") is None
    or (not GIT_SERVER.exists() and importlib.util.find_spec("mcp_server_git") is None),
    reason="mcp-server-git not installed: see tests/requirements-servers.txt",
)


def connect(portal: BlockingPortal, home: Path, artifacts: Path, upstream: list[str]) -> Client:
    config = write_config(home / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", *upstream)
    return Client(portal, argv, base_env(artifacts, config), home / "stderr.log")


# -- server-filesystem -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("files")
    (root / "big.txt").write_text(load_bigserver().numbered_text(5_000_000, "file"))
    (root / "small.txt").write_text("a small file\n")
    return root


@pytest.fixture(scope="module")
def filesystem(
    portal: BlockingPortal, files: Path, artifacts: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("filesystem")
    upstream = ["node", str(NPM_BIN / "mcp-server-filesystem"), str(files)]
    with connect(portal, home, artifacts, upstream) as client:
        yield client


@needs_node
def test_filesystem_a_multi_megabyte_file_is_bounded_and_kept_whole(
    filesystem: Client, files: Path, artifacts: Path
) -> None:
    data = (files / "big.txt").read_bytes()
    result = filesystem.call("read_text_file", {"path": str(files / "big.txt")})
    assert not result.is_error
    # Its schema ({"content": string}) is honoured: the structured twin is cut by structure.
    structured = result.structured_content
    assert structured is not None and set(structured) == {"content"}
    assert len(json.dumps(structured, ensure_ascii=False).encode()) <= THRESHOLD
    assert REF.search(structured["content"])
    (text,) = text_of(result)
    assert len(text.encode()) <= THRESHOLD
    (ref,) = REF.findall(text)
    assert ref == reference_of(data)
    assert open_store(artifacts).read_bytes(ref) == data


@needs_node
def test_filesystem_read_artifact_returns_byte_identical_slices_of_the_file(
    filesystem: Client, files: Path
) -> None:
    data = (files / "big.txt").read_bytes()
    text = text_of(filesystem.call("read_text_file", {"path": str(files / "big.txt")}))[0]
    ref = REF.findall(text)[0]
    for offset, length in [(0, 1), (123_457, 5000), (len(data) - 777, 777)]:
        result = filesystem.call("read_artifact", {"ref": ref, "offset": offset, "length": length})
        assert text_of(result)[0].encode() == data[offset : offset + length]


@needs_node
def test_filesystem_a_small_file_passes_with_its_structured_content(
    filesystem: Client, files: Path
) -> None:
    result = filesystem.call("read_text_file", {"path": str(files / "small.txt")})
    assert text_of(result) == ["a small file\n"]
    assert result.structured_content == {"content": "a small file\n"}


# -- server-everything -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def everything(
    portal: BlockingPortal, artifacts: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("everything")
    upstream = ["node", str(NPM_BIN / "mcp-server-everything")]
    with connect(portal, home, artifacts, upstream) as client:
        yield client


@needs_node
def test_everything_multi_block_results_with_an_image_pass_unchanged(everything: Client) -> None:
    result = everything.call(
        "get-annotated-message", {"messageType": "success", "includeImage": True}
    )
    assert [block.type for block in result.content] == ["text", "image"]
    assert result.content[1].mime_type == "image/png"
    tiny = everything.call("get-tiny-image")
    assert "image" in [block.type for block in tiny.content]


@needs_node
def test_everything_resource_links_pass(everything: Client) -> None:
    result = everything.call("get-resource-links", {"count": 3})
    assert [block.type for block in result.content] == ["text"] + ["resource_link"] * 3


@needs_node
def test_everything_structured_content_passes_and_its_schema_is_kept(
    everything: Client,
) -> None:
    assert everything.session is not None
    tools = everything.run(everything.session.list_tools).tools
    schemas = {tool.name: tool.output_schema for tool in tools}
    assert schemas["get-structured-content"] is not None
    result = everything.call("get-structured-content", {"location": "Chicago"})
    assert result.structured_content is not None
    assert set(result.structured_content) >= {"temperature", "conditions"}


@needs_node
def test_everything_progress_reaches_the_client(everything: Client) -> None:
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    everything.call(
        "trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        progress_callback=on_progress,
    )
    assert seen == [1, 2, 3]


@needs_node
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_everything_log_messages_reach_the_client(everything: Client) -> None:
    assert everything.session is not None
    session = everything.session
    before = len(everything.logs)

    async def toggle_and_wait() -> None:
        everything.log_arrived = arrived = anyio.Event()
        await session.set_logging_level("debug")
        await session.call_tool("toggle-simulated-logging", {})
        with anyio.fail_after(30):
            await arrived.wait()
        await session.call_tool("toggle-simulated-logging", {})

    everything.run(toggle_and_wait)
    assert len(everything.logs) > before


# -- mcp-server-git --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    lines = [f"original line {n:06d}\n" for n in range(60_000)]
    (root / "data.txt").write_text("".join(lines))
    git("add", "data.txt")
    git("commit", "-q", "-m", "initial")
    (root / "data.txt").write_text("".join(f"changed line {n:06d}\n" for n in range(60_000)))
    return root


@pytest.fixture(scope="module")
def git_server(
    portal: BlockingPortal, repo: Path, artifacts: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("git")
    upstream = [*GIT_COMMAND, "--repository", str(repo)]
    with connect(portal, home, artifacts, upstream) as client:
        yield client


@needs_git_server
def test_git_a_large_diff_is_bounded_and_searchable(git_server: Client, repo: Path) -> None:
    result = git_server.call("git_diff_unstaged", {"repo_path": str(repo)})
    (text,) = text_of(result)
    assert len(text.encode()) <= THRESHOLD
    assert "diff --git a/data.txt b/data.txt" in text
    (ref,) = REF.findall(text)
    found = git_server.call("read_artifact", {"ref": ref, "pattern": r"^\+changed line 031415$"})
    assert "+changed line 031415" in text_of(found)[0]
    assert "1 match" in text_of(found)[1]


@needs_git_server
def test_git_small_results_pass_unchanged(git_server: Client, repo: Path) -> None:
    (text,) = text_of(git_server.call("git_log", {"repo_path": str(repo), "max_count": 1}))
    assert "initial" in text
    assert not REF.search(text)


@needs_node
def test_filesystem_a_large_media_file_is_replaced_by_a_text_naming_its_artifact(
    filesystem: Client, files: Path, artifacts: Path
) -> None:
    data = load_bigserver().payload(400_000, "png")
    (files / "picture.png").write_bytes(data)
    result = filesystem.call("read_media_file", {"path": str(files / "picture.png")})
    (block,) = result.content
    assert block.type == "text"
    assert "image/png" in block.text and "520.8 KB" in block.text
    (ref,) = REF.findall(block.text)
    assert open_store(artifacts).read_bytes(ref) == data
