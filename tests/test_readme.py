"""The README's quick start and the proxy recipes run as written, so they cannot drift.

An HTML comment on the line before a fenced block says what is done with the block:

- ``<!-- test: run [with PATH=FIXTURE ...] -->``: run it with bash (errexit, pipefail)
  in a scratch directory with a scratch HOME; first put each ``tests/data/wrap/FIXTURE``
  (a real-shaped client configuration) at ``PATH`` (``~`` is that HOME). It must exit 0.
  ``pip install SPEC`` names this project (``.`` from a clone, ``toolcap`` from an index)
  and extras it has; it is checked, then skipped: the installed ``toolcap`` is used.
  ``python3 -m venv .venv`` is skipped too (``.venv`` is the test run's environment).
  A stand-in ``claude`` records ``claude mcp add NAME -- COMMAND...``; each command must
  be the absolute path of ``toolcap`` with arguments that ``toolcap`` accepts.
- ``<!-- test: python -->``: run it with this Python; it must exit 0.
- ``<!-- test: output -->``: the block is the exact stdout of the last block run.
- ``<!-- test: output-contains -->``: each line of the block is a line of its stdout or stderr.
- ``<!-- test: file [PATH] -->``: a client's JSON configuration, which ``toolcap wrap
  --dry-run`` must accept, or a TOML configuration file, which ``toolcap config show``
  must accept; written at ``PATH`` (else a scratch file) for the blocks after it.
- ``<!-- test: suite -->``: the block is ``bash .ci/run``, the whole suite (not run here).

Every ``sh`` block of the README and of the proxy page's recipes must carry one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import tomllib

from helpers import PYTHON, TOOLCAP
from toolcap.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PROXY_PAGE = ROOT / "docs" / "proxy.md"
RECIPES = "## Adding it to an MCP client"
FIXTURES = ROOT / "tests" / "data" / "wrap"
_MARKER = re.compile(r"<!-- test: (?P<spec>.*?) -->")
_PIP = re.compile(r"(?:\S*/)?pip install(?: -q| --quiet)* (?P<spec>\S+)")
_SPEC = re.compile(r"(?P<name>\.|toolcap)(?:\[(?P<extras>[a-z0-9,-]+)\])?")
_CLAUDE = f"""#!{PYTHON}
import json, os, sys
args = sys.argv[1:]
usage = "usage: claude mcp add NAME [--env KEY=VALUE ...] -- COMMAND [ARGS...]"
if len(args) < 5 or args[:2] != ["mcp", "add"] or "--" not in args[3:]:
    sys.exit(usage)
cut = args.index("--", 3)
env = {{}}
for option in args[3:cut]:
    if option in ("-e", "--env"):
        continue
    key, sep, value = option.partition("=")
    if not sep or not key or args[3] not in ("-e", "--env"):
        sys.exit(usage)
    env[key] = value
if cut + 1 >= len(args):
    sys.exit(usage)
with open(os.path.join(os.environ["HOME"], ".claude-mcp-add.jsonl"), "a") as log:
    log.write(json.dumps({{"name": args[2], "command": args[cut + 1:], "env": env}}) + "\\n")
"""


@dataclass(frozen=True)
class Block:
    """One fenced block of a page, and the test comment before it (or None)."""

    marker: str | None
    lang: str
    body: str
    line: int


def blocks_of(text: str) -> list[Block]:
    """The fenced blocks of a Markdown text, in order."""
    found: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = re.fullmatch(r"```(\w*)\s*", lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        before = _MARKER.fullmatch(lines[index - 1].strip()) if index else None
        body = "".join(line + "\n" for line in lines[index + 1:end])
        found.append(Block(before["spec"] if before else None, opening[1], body, index + 1))
        index = end + 1
    return found


def section(text: str, heading: str) -> str:
    """From ``heading`` to the next heading of the same or a higher level (fences skipped)."""
    depth = len(heading.split(" ")[0])
    lines = text.splitlines(keepends=True)
    start = lines.index(heading + "\n")
    in_fence = False
    for end in range(start + 1, len(lines)):
        if lines[end].startswith("```"):
            in_fence = not in_fence
        elif not in_fence and re.match(rf"#{{1,{depth}}} ", lines[end]):
            return "".join(lines[start:end])
    return "".join(lines[start:])


def _extras() -> set[str]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return set(tomllib.load(file)["project"]["optional-dependencies"])


@dataclass
class Sandbox:
    """A scratch HOME and working directory, with this run's ``toolcap`` on PATH."""

    root: Path
    last: subprocess.CompletedProcess[bytes] | None = None
    claude_adds: list[dict[str, object]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.work = self.root / "work"
        bin_dir = self.root / "bin"
        for folder in (self.home, self.work, bin_dir):
            folder.mkdir(parents=True)
        (self.work / ".venv").symlink_to(sys.prefix)  # what `python3 -m venv .venv` made
        claude = bin_dir / "claude"
        claude.write_text(_CLAUDE)
        claude.chmod(0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAP_")}
        self.env.update(HOME=str(self.home), XDG_CACHE_HOME=str(self.home / ".cache"),
                        XDG_CONFIG_HOME=str(self.home / ".config"),
                        PATH=os.pathsep.join([str(bin_dir), str(Path(TOOLCAP).parent),
                                              self.env.get("PATH", "")]))

    def path(self, written: str) -> Path:
        return self.home / written[2:] if written.startswith("~/") else self.work / written

    def run(self, argv: list[str], where: str) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(argv, cwd=self.work, env=self.env, capture_output=True,
                              timeout=300, check=False)
        assert done.returncode == 0, (
            f"{where} exits {done.returncode}:\n{done.stdout.decode(errors='replace')[-2000:]}"
            f"\n{done.stderr.decode(errors='replace')[-2000:]}")
        return done


def _without_installs(script: str, where: str) -> str:
    """The script with its install steps checked and taken out."""
    kept = []
    for line in script.splitlines():
        steps = []
        for step in line.split(" && "):
            command = re.sub(r"\s+#.*$", "", step.strip())
            if command == "python3 -m venv .venv":
                step = "true"
            elif "pip install" in command:
                pip = _PIP.fullmatch(command)
                assert pip, f"{where}: cannot check the install line {command!r}"
                spec = _SPEC.fullmatch(pip["spec"].strip("'\""))
                assert spec, f"{where}: {pip['spec']} is neither '.' nor 'toolcap'"
                unknown = set((spec["extras"] or "").split(",")) - _extras() - {""}
                assert not unknown, f"{where}: no extra named {sorted(unknown)}"
                step = "true"
            steps.append(step)
        kept.append(" && ".join(steps))
    return "\n".join(kept) + "\n"


def _check_file(sandbox: Sandbox, block: Block, spec: list[str], where: str) -> None:
    target = sandbox.path(spec[1]) if len(spec) > 1 else sandbox.root / f"block-{block.line}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.body, encoding="utf-8")
    if block.lang == "json":
        json.loads(block.body)
        sandbox.run([TOOLCAP, "wrap", str(target), "--dry-run"], where)
    elif block.lang == "toml":
        sandbox.run([TOOLCAP, "config", "show", "--config", str(target)], where)
    else:
        raise AssertionError(f"{where}: a file block must be json or toml, not {block.lang!r}")


def _check_output(sandbox: Sandbox, block: Block, kind: str, where: str) -> None:
    assert sandbox.last is not None, f"{where}: an output block needs a block run before it"
    stdout = sandbox.last.stdout.decode()
    if kind == "output":
        assert stdout == block.body, f"{where}: the command printed\n{stdout[:4000]}"
        return
    printed = set(stdout.splitlines()) | set(sandbox.last.stderr.decode().splitlines())
    missing = [line for line in block.body.splitlines() if line and line not in printed]
    assert not missing, f"{where}: not printed: {missing}"


def run_page(text: str, name: str, sandbox: Sandbox) -> None:
    """Do what the test comments of ``text`` say, block after block."""
    for block in blocks_of(text):
        if block.marker is None:
            continue
        where = f"{name}, the block at line {block.line}"
        spec = shlex.split(block.marker)
        kind = spec[0]
        if kind == "run":
            script = _without_installs(block.body, where)
            for fixture in spec[2:] if spec[1:2] == ["with"] else []:
                written, source = fixture.split("=", 1)
                target = sandbox.path(written)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(FIXTURES / source, target)
            sandbox.last = sandbox.run(["bash", "-e", "-o", "pipefail", "-c", script], where)
        elif kind == "python":
            sandbox.last = sandbox.run([PYTHON, "-c", block.body], where)
        elif kind in ("output", "output-contains"):
            _check_output(sandbox, block, kind, where)
        elif kind == "file":
            _check_file(sandbox, block, spec, where)
        elif kind == "suite":
            assert block.body == "bash .ci/run\n", f"{where}: the suite is `bash .ci/run`"
            assert (ROOT / ".ci" / "run").is_file()
        else:
            raise AssertionError(f"{where}: unknown test comment {block.marker!r}")
    _check_claude_adds(sandbox)


def _check_claude_adds(sandbox: Sandbox) -> None:
    """What ``claude mcp add`` was given starts this ``toolcap`` with valid arguments."""
    log = sandbox.home / ".claude-mcp-add.jsonl"
    if not log.exists():
        return
    for line in log.read_text().splitlines():
        added = json.loads(line)
        command = added["command"]
        assert Path(command[0]).resolve() == Path(TOOLCAP).resolve(), added
        assert command[1] == "proxy", added
        try:
            parsed = build_parser().parse_args(command[1:])
        except SystemExit as error:
            raise AssertionError(f"toolcap refuses the arguments of {added}") from error
        # Each --header-env names a variable the server's env sets.
        for pair in parsed.header_env:
            assert pair.partition("=")[2] in added["env"], added
        sandbox.claude_adds.append(added)
    log.unlink()


def unmarked_shell_blocks(text: str) -> list[int]:
    return [b.line for b in blocks_of(text) if b.lang in ("sh", "bash", "console")
            and b.marker is None]


def test_every_shell_block_of_the_readme_and_of_the_recipes_is_run() -> None:
    assert unmarked_shell_blocks(README.read_text()) == []
    assert unmarked_shell_blocks(section(PROXY_PAGE.read_text(), RECIPES)) == []


def test_the_readme_runs_as_written(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    run_page(README.read_text(), "README.md", sandbox)
    # The wrap example ran all the way to --undo: the file is as the README shows it.
    readme = README.read_text()
    shown = next(b for b in blocks_of(readme) if b.marker and b.marker.startswith("file ~/"))
    assert (sandbox.home / ".cursor" / "mcp.json").read_text() == shown.body


def test_the_proxy_recipes_run_as_written(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    run_page(section(PROXY_PAGE.read_text(), RECIPES), "docs/proxy.md", sandbox)
    assert [added["name"] for added in sandbox.claude_adds] == ["filesystem", "sentry"]
    wrapped = json.loads((sandbox.home / ".gemini" / "settings.json").read_text())
    assert {name for name, server in wrapped["mcpServers"].items()
            if Path(server.get("command", "")).resolve() == Path(TOOLCAP).resolve()} == {
        "git", "github"}  # the SSE one is skipped


# The test of the test: a README that drifts from the code fails it.

def _readme_section(heading: str) -> str:
    return section(README.read_text(), heading)


@pytest.mark.parametrize(
    ("heading", "old", "new"),
    [
        ("## What the model receives", "cap --limit 1KB", "cap --limit 1KB --lmit 2KB"),
        ("## What the model receives", "kept 795 B of 1.5 MB", "kept 796 B of 1.5 MB"),
        ("## Quick start", "pip install -q .", "pip install -q '.[mcpp]'"),
        ("## Quick start", "pip install -q .", "pip install -q requests"),
        ("## Quick start", "--lines 499999:500000", "--line-range 499999:500000"),
        ("### The command line", "oops\n[exit status 3]", "oops\n[exit status 4]"),
        ("### The library", "bound_chat_messages(messages)", "bound_chat_messages(messages, 3)"),
    ],
    ids=["unknown option", "changed output", "unknown extra", "another package",
         "unknown artifacts option", "changed exit status", "changed library call"],
)
def test_a_readme_that_drifts_from_the_code_fails(tmp_path: Path, heading: str, old: str,
                                                  new: str) -> None:
    text = _readme_section(heading)
    assert old in text
    run_page(text, "README.md", Sandbox(tmp_path / "as-written"))
    with pytest.raises(AssertionError):
        run_page(text.replace(old, new), "README.md", Sandbox(tmp_path / "drifted"))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("--header-env Authorization=SENTRY_AUTH", "--header-envs Authorization=SENTRY_AUTH"),
        ("toolcap wrap ~/.gemini/settings.json", "toolcap wrap ~/.gemini/settings.json --all"),
        ('"mcpServers": {\n    "remote"', '"mcpServers": [{\n    "remote"'),
        ('"$(command -v toolcap)" proxy -- npx', "toolcap proxy -- npx"),
    ],
    ids=["unknown proxy option", "unknown wrap option", "broken client config",
         "relative toolcap path"],
)
def test_proxy_recipes_that_drift_from_the_code_fail(tmp_path: Path, old: str, new: str) -> None:
    text = section(PROXY_PAGE.read_text(), RECIPES)
    assert old in text
    with pytest.raises((AssertionError, json.JSONDecodeError)):
        run_page(text.replace(old, new), "docs/proxy.md", Sandbox(tmp_path))


def test_a_shell_block_without_a_test_comment_is_found() -> None:
    text = _readme_section("## Quick start").replace("<!-- test: suite -->\n", "")
    assert len(unmarked_shell_blocks(text)) == 1
