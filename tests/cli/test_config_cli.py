"""``toolcap config``: trust, untrust and show, through the real command."""

from __future__ import annotations

from pathlib import Path

from helpers import Toolcap

HOSTILE = '[tool.toolcap]\nartifacts = "{store}"\nbatch_ceiling = "300KB"\n'


def _clone(toolcap: Toolcap) -> Path:
    """A cloned repository whose pyproject.toml sends outputs to a store of its choosing."""
    root = toolcap.home / "clone"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(HOSTILE.format(store=toolcap.home / "theirs"))
    toolcap.env.pop("TOOLCAP_ARTIFACTS")
    return root


def test_run_in_a_cloned_repository_does_not_write_to_its_store(toolcap: Toolcap) -> None:
    root = _clone(toolcap)
    done = toolcap("run", "--", "sh", "-c", "echo secret-token", cwd=root / "src")
    assert done.returncode == 2
    error = done.stderr.decode()
    assert error.count("\n") == 1 and "Traceback" not in error
    assert "artifacts: a file found from the working directory may not set where" in error
    assert not (toolcap.home / "theirs").exists()


def test_trust_then_run_uses_the_store_and_a_change_revokes_it(toolcap: Toolcap) -> None:
    root = _clone(toolcap)
    trusted = toolcap("config", "trust", cwd=root / "src")
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.decode() == f"trusted {(root / 'pyproject.toml').resolve()}\n"
    big = "python3 -c \"print('x' * 400_000)\""
    assert toolcap("run", "--", "sh", "-c", big, cwd=root / "src").returncode == 0
    assert any((toolcap.home / "theirs").rglob("*"))
    with (root / "pyproject.toml").open("a") as stream:
        stream.write("# changed\n")
    changed = toolcap("run", "--", "true", cwd=root / "src")
    assert changed.returncode == 2 and b"changed since you trusted it" in changed.stderr
    untrusted = toolcap("config", "untrust", str(root / "pyproject.toml"))
    assert untrusted.returncode == 0
    again = toolcap("config", "untrust", str(root / "pyproject.toml"))
    assert again.returncode == 1 and b"was not trusted" in again.stderr


def test_show_names_the_file_and_where_each_value_comes_from(toolcap: Toolcap) -> None:
    root = _clone(toolcap)
    (root / "pyproject.toml").write_text(
        '[tool.toolcap]\nbatch_ceiling = "300KB"\ncontext_window = "200k tokens"\n')
    shown = toolcap("config", "show", cwd=root / "src",
                    env={"TOOLCAP_ARTIFACTS": str(toolcap.home / "mine")})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.decode().splitlines()
    assert lines[0] == (f"# configuration file: {root / 'pyproject.toml'}"
                        " (found from the working directory; untrusted)")
    assert 'batch_ceiling = "300.0 KB"  # file' in lines
    assert f'artifacts = "{toolcap.home / "mine"}"  # TOOLCAP_ARTIFACTS' in lines
    assert 'wire_budget = "64.0 KB"  # default' in lines
    assert 'context_window = "585.9 KB"  # file' in lines  # 3 bytes a token
    assert 'reserve = "32.0 KB"  # default' in lines
    assert 'measure = "bytes"  # default' in lines


def test_show_prints_the_window_in_tokens_under_measure_tokens(toolcap: Toolcap) -> None:
    config = toolcap.home / "toolcap.toml"
    config.write_text('measure = "tokens"\ncontext_window = "200k tokens"\n')
    shown = toolcap("config", "show", "--config", str(config))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.decode().splitlines()
    assert 'measure = "tokens"  # file' in lines
    assert 'context_window = "200.0k tokens"  # file' in lines
    assert 'reserve = "32.7k tokens"  # default' in lines
    config.write_text('measure = "tokens"\ncontext_window = "800KB"\n')
    refused = toolcap("config", "show", "--config", str(config))
    assert refused.returncode == 2
    error = refused.stderr.decode()
    assert error.count("\n") == 1
    assert "context_window: '800KB' is in bytes, but the measure is tokens" in error


def test_a_user_level_file_is_found_without_config(toolcap: Toolcap) -> None:
    user_dir = toolcap.config_dir / "toolcap"
    user_dir.mkdir(parents=True)
    (user_dir / "toolcap.toml").write_text('[tools."*"]\nsize_threshold = "1KB"\n')
    done = toolcap("cap", "--no-spill", input=b"y" * 5000)
    assert done.returncode == 0
    assert len(done.stdout) <= 1024 and b"[toolcap:" in done.stdout


def test_config_dev_zero_is_a_one_line_error(toolcap: Toolcap) -> None:
    done = toolcap("cap", input=b"x", env={"TOOLCAP_CONFIG": "/dev/zero"}, timeout=30)
    assert done.returncode == 2
    assert done.stderr == (
        b"toolcap: error: /dev/zero: not a regular file; name a configuration file\n"
    )


def test_a_marker_with_a_huge_width_is_a_one_line_error(toolcap: Toolcap) -> None:
    config = toolcap.home / "c.toml"
    config.write_text('[tools."*"]\nmarker = "{kept:>4000000000}"\n')
    done = toolcap("cap", "--config", str(config), input=b"x")
    assert done.returncode == 2
    assert done.stderr.count(b"\n") == 1 and b"takes no format spec" in done.stderr


def test_show_prints_keep_lines_as_a_toml_list(toolcap: Toolcap) -> None:
    (toolcap.home / "toolcap.toml").write_text(
        '[tools.Bash]\nkeep_lines = ["^E\\\\d+", "say \\"no\\""]\nkeep_lines_share = 0.5\n')
    shown = toolcap("config", "show")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.decode().splitlines()
    assert 'tools.Bash.keep_lines = ["^E\\\\d+", "say \\"no\\""]  # file' in lines
    assert "tools.Bash.keep_lines_share = 0.5  # file" in lines


def test_show_without_a_file_says_where_the_user_level_file_would_be_read(
    toolcap: Toolcap,
) -> None:
    # A proxy started by a GUI client reads only the user-level file: say where it goes.
    (toolcap.home / "empty").mkdir()
    shown = toolcap("config", "show", cwd=toolcap.home / "empty")
    assert shown.returncode == 0, shown.stderr
    expected = toolcap.config_dir / "toolcap" / "toolcap.toml"
    assert shown.stdout.decode().splitlines()[0] == (
        f"# no configuration file: defaults and environment (the user-level file would be "
        f"{expected})")
    expected.parent.mkdir(parents=True)
    expected.write_text('batch_ceiling = "300KB"\n')
    found = toolcap("config", "show", cwd=toolcap.home / "empty")
    assert found.stdout.decode().splitlines()[0] == (
        f"# configuration file: {expected} (named or user-level)")
