"""The ``toolcap`` command as a user meets it: real subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolcap
from helpers import TOOLCAP, Toolcap


def run(*args: str, stdin: bytes = b"", cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return Toolcap(cwd or Path.cwd())(*args, input=stdin, env=env, timeout=60)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A directory with no configuration above it that toolcap could find."""
    (tmp_path / "toolcap.toml").write_text("")
    return tmp_path


def test_version_prints_the_package_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"toolcap {toolcap.__version__}"


def test_cap_bounds_standard_input_and_prints_the_notice(workdir: Path) -> None:
    data = b"".join(b"%d\n" % i for i in range(200000))
    result = run("cap", "--no-spill", "--limit", "4KB", stdin=data, cwd=workdir)
    assert result.returncode == 0
    assert len(result.stdout) <= 4096
    assert result.stdout.startswith(b"0\n1\n2\n")
    assert result.stdout.endswith(b"199998\n199999\n")
    assert result.stderr.decode() == (
        f"cap: sent {toolcap.human_size(len(result.stdout))} of 1.2 MB to the assistant"
        " (size_threshold)\n"
    )


def test_cap_passes_output_that_fits_through_byte_for_byte(workdir: Path) -> None:
    data = b"caf\xc3\xa9 \xff\xfe not utf-8\n"
    result = run("cap", stdin=data, cwd=workdir)
    assert result.returncode == 0
    assert result.stdout == data
    assert result.stderr == b""


def test_cap_uses_the_named_tools_policy_from_the_config(workdir: Path) -> None:
    (workdir / "toolcap.toml").write_text('[tools.pytest]\nsize_threshold = "2KB"\n'
                                          'strategy = "tail"\nspill = false\n')
    data = b"".join(b"line %d\n" % i for i in range(5000))
    result = run("cap", "--tool", "pytest", stdin=data, cwd=workdir)
    assert result.returncode == 0
    assert len(result.stdout) <= 2048
    assert result.stdout.startswith(b"[toolcap: output truncated")
    assert result.stdout.endswith(b"line 4999\n")


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        (["cap", "--limit", "0"], "", '--limit: a limit of \'0\' would drop every response; '
                                      'write "unlimited" for no limit'),
        (["cap", "--limit", "12 parsecs"], "", "--limit: invalid size '12 parsecs'"),
        (["cap", "--limit", "512B"], "", "--limit: limit '512B' is below the 1KB minimum"),
        (["cap", "--head-ratio", "2"], "", "--head-ratio: head_ratio must be between 0 and 1"),
        (["cap"], "batch_ceiling = 0\n", "batch_ceiling: a limit of 0 would drop"),
        (["cap"], "[tools.Read]\nstrategy = 'middle'\n", "tools.Read.strategy: unknown strategy"),
        (["cap"], "this is not toml\n", "invalid TOML"),
        (["cap", "missing-file.txt"], "", "cannot read missing-file.txt: No such file"),
    ],
)
def test_bad_arguments_and_configuration_are_one_line_and_exit_2(
    workdir: Path, args: list[str], config: str, message: str
) -> None:
    (workdir / "toolcap.toml").write_text(config)
    result = run(*args, stdin=b"x" * 5000, cwd=workdir)
    assert result.returncode == 2
    stderr = result.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("toolcap: error: ")
    assert message in stderr
    assert "Traceback" not in stderr


def test_an_unknown_option_is_a_usage_error_with_exit_2() -> None:
    result = run("cap", "--frobnicate")
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "toolcap: error: unrecognized arguments: --frobnicate (see 'toolcap --help')\n"
    )


def test_a_closed_standard_output_is_a_one_line_error() -> None:
    result = subprocess.run([TOOLCAP, "cap"], input=b"x", stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, check=False, timeout=60,
                            preexec_fn=lambda: os.close(1))
    assert result.returncode == 2
    assert result.stderr == b"toolcap: error: standard output is closed\n"


def test_the_config_named_by_toolcap_config_is_used(workdir: Path, tmp_path: Path) -> None:
    named = tmp_path / "named.toml"
    named.write_text('[tools."*"]\nsize_threshold = "1KB"\nspill = false\n')
    result = run("cap", stdin=b"y" * 10000, cwd=workdir, env={"TOOLCAP_CONFIG": str(named)})
    assert result.returncode == 0
    assert len(result.stdout) <= 1024


def test_cap_json_fits_the_text_field_to_the_wire_budget_and_keeps_the_input(
    workdir: Path, tmp_path: Path
) -> None:
    # Tabs and quotes double in JSON: 120 KB of text is well over 64 KB once escaped.
    data = b'a\tb"c\n' * 20000
    store = tmp_path / "store"
    result = run("cap", "--json", "--limit", "200KB", "--artifacts", str(store), stdin=data,
                 cwd=workdir)
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert toolcap.json_size(document["text"]) <= 64 * 1024
    assert document["truncated"] is True and document["capped_by"] == "wire_budget"
    (reference,) = document["artifacts"]
    assert reference in document["text"]
    shown = run("artifacts", "cat", reference, "--artifacts", str(store), cwd=workdir)
    assert shown.stdout == data


def test_cap_json_of_a_small_input_reports_it_unchanged(workdir: Path) -> None:
    result = run("cap", "--json", stdin=b"hello\n", cwd=workdir)
    assert json.loads(result.stdout) == {
        "tool": "cap", "text": "hello\n", "truncated": False, "capped_by": None,
        "original_bytes": 6, "delivered_bytes": 6, "artifacts": None,
    }


def test_a_subcommand_loads_only_its_own_modules(tmp_path: Path) -> None:
    # Start-up is most of a short command's time: `cap` must not import `compact`'s
    # session readers, `wrap`'s client configurations or the proxy.
    script = ("import sys; from toolcap.cli import main; status = main(['cap', '--no-spill']); "
              "print(status, sorted(m for m in sys.modules if m.startswith('toolcap.cli.')))")
    result = subprocess.run([sys.executable, "-c", script], input=b"hello\n", cwd=tmp_path,
                            capture_output=True, timeout=60, check=True)
    status, modules = result.stdout.decode().splitlines()[-1].split(" ", 1)
    assert status == "0"
    assert modules == "['toolcap.cli._cap', 'toolcap.cli._common']"


def _modules_loaded_by(args: list[str], stdin: bytes, tmp_path: Path) -> set[str]:
    script = (f"import sys; from toolcap.cli import main; status = main({args!r}); "
              "sys.stderr.write('\\n' + ' '.join(sorted(sys.modules)))")
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOOLCAP_")}
    env["TOOLCAP_ARTIFACTS"] = str(tmp_path / "artifacts")
    result = subprocess.run([sys.executable, "-c", script], input=stdin, cwd=tmp_path, env=env,
                            capture_output=True, timeout=60, check=True)
    return set(result.stderr.decode().splitlines()[-1].split())


def test_cap_loads_only_the_store_it_writes_to(tmp_path: Path) -> None:
    # Start-up again: `cap` does not start processes, and a store is loaded only
    # when something is kept in it, and then only the one in use.
    (tmp_path / "toolcap.toml").write_text("")
    unused = {"subprocess", "toolcap.shell._run", "toolcap.store._fsspec", "uuid"}
    kept_nothing = _modules_loaded_by(["cap", "--no-spill"], b"x\n" * 5000, tmp_path)
    assert not unused & kept_nothing
    assert not {name for name in kept_nothing if name.startswith("toolcap.store.")} - {
        "toolcap.store._regex", "toolcap.store._limits"}  # keep_lines' matchers; the cut
    spilled = _modules_loaded_by(["cap", "--limit", "1KB"], b"x\n" * 5000, tmp_path)
    assert "toolcap.store._local" in spilled and "toolcap.store._writer" in spilled
    assert not unused & spilled
    assert any((tmp_path / "artifacts").rglob("*.json"))  # it did keep the input


def test_help_still_lists_every_subcommand() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("cap", "proxy", "wrap", "artifacts", "run", "repair", "compact", "config"):
        assert command in result.stdout.decode()
