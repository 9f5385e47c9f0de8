"""`toolcap wrap` whose final write fails: the file, a backup and a record it had are as
they were, nothing this run made is left beside it, nothing says a server was wrapped,
and the error is one line naming the file and what to do (exit status 2)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import TOOLCAP, Toolcap
from toolcap.cli import main

DESKTOP = Path(__file__).resolve().parents[1] / "data" / "wrap" / "claude-desktop"
WHAT_TO_DO = ("nothing was changed: make the file and its folder writable (permissions, "
              "or chattr -i if immutable), then run again")


def client_config(home: Path) -> Path:
    path = home / "claude_desktop_config.json"
    shutil.copyfile(DESKTOP / "claude_desktop_config.json", path)
    return path


def files_beside(path: Path) -> dict[str, bytes]:
    """Every file of ``path``'s folder (temporary ones too) and its bytes."""
    return {entry.name: entry.read_bytes() for entry in path.parent.iterdir() if entry.is_file()}


def refuse_replacing(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on ``path`` cannot be replaced: the rename onto it fails as on an
    immutable file (EPERM), whoever runs the test (root too)."""
    real_replace = os.replace

    def replace(source: str | Path, target: str | Path, **options: object) -> None:
        if Path(target).resolve() == path:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(target))
        real_replace(source, target, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return client_config(tmp_path).resolve()


def wrap(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """Run `toolcap wrap ARGS` here: its exit status and its lines on stderr."""
    status = main(["wrap", *args])
    return status, capsys.readouterr().err.splitlines()


def assert_refused(status: int, said: list[str], path: Path) -> None:
    assert status == 2
    assert said == [f"toolcap: error: cannot write {path}: "
                    f"{os.strerror(errno.EPERM)}; {WHAT_TO_DO}"]


# "link": the backup is a second name of the file; "copy": a file cannot be linked (an
# immutable one, say), and the backup is a copy of it.
@pytest.mark.parametrize("backup", ["link", "copy"])
def test_a_failed_write_leaves_no_backup_no_record_and_says_nothing_was_wrapped(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    backup: str,
) -> None:
    refuse_replacing(config, monkeypatch)
    if backup == "copy":
        def link(source: object, target: object, **options: object) -> None:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

        monkeypatch.setattr(os, "link", link)
    before = files_beside(config)
    status, said = wrap(capsys, str(config), "--toolcap", TOOLCAP)
    assert_refused(status, said, config)
    assert files_beside(config) == before  # the file as it was, and nothing beside it


def test_a_failed_write_leaves_a_backup_and_record_of_an_earlier_run_as_they_were(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert wrap(capsys, str(config), "--toolcap", TOOLCAP, "--server", "github")[0] == 0
    before = files_beside(config)
    assert {"claude_desktop_config.json.bak", "claude_desktop_config.json.toolcap.json"} < set(
        before)
    refuse_replacing(config, monkeypatch)
    status, said = wrap(capsys, str(config), "--toolcap", TOOLCAP)
    assert_refused(status, said, config)
    assert files_beside(config) == before
    # Undone, as refused: nothing says "restored", the record stays for a later --undo.
    status, said = wrap(capsys, str(config), "--undo")
    assert_refused(status, said, config)
    assert files_beside(config) == before


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    """A client config made immutable (chattr +i), where the file system allows it."""
    path = client_config(tmp_path)
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run([chattr, "+i", str(path)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not allowed here: {made.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def test_wrapping_an_immutable_file_changes_nothing_and_says_so_in_one_line(
    toolcap: Toolcap, immutable: Path
) -> None:
    before = files_beside(immutable)
    done = toolcap("wrap", str(immutable), "--toolcap", TOOLCAP)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"toolcap: error: cannot write {immutable.resolve()}: "
        f"{os.strerror(errno.EPERM)}; {WHAT_TO_DO}"]
    assert files_beside(immutable) == before
