"""``toolcap artifacts``: the command-line way back into the store, run as a real command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolcap.store import LocalStore, StoreLimits

TEXT = "".join(f"line {n}{' ERROR' if n in (5, 6, 20) else ''}\n" for n in range(1, 31))


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "artifacts"
    ref = LocalStore(root).put(TEXT, tool="Grep")
    return root, ref


def test_ls_prints_one_reference_per_line_newest_first(
    tmp_path: Path, toolcap: Any
) -> None:
    times = iter([1000.0, 2000.0])
    store = LocalStore(tmp_path / "a", clock=lambda: next(times))
    old, new = store.put(b"old"), store.put(b"new", tool="Read")
    done = toolcap("artifacts", "ls", "--artifacts", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert [line.split("\t")[0] for line in lines] == [new, old]
    assert lines[0].split("\t")[1:] == ["3 B", "1970-01-01T00:33:20Z", "Read"]
    as_json = toolcap("artifacts", "ls", "--json", "--artifacts", str(tmp_path / "a"))
    records = json.loads(as_json.stdout)
    assert [r["ref"] for r in records] == [new, old]
    assert records[0]["bytes"] == 3 and records[0]["tool"] == "Read"


def test_the_store_comes_from_the_environment_or_the_config_file(
    stored: tuple[Path, str], tmp_path: Path, toolcap: Any
) -> None:
    root, ref = stored
    by_env = toolcap("artifacts", "ls", env={"TOOLCAP_ARTIFACTS": str(root)})
    assert by_env.stdout.decode().startswith(ref)
    config = tmp_path / "toolcap.toml"
    config.write_text(f'artifacts = "{root}"\n')
    by_config = toolcap("artifacts", "ls", "--config", str(config),
                        env={"TOOLCAP_ARTIFACTS": ""})
    assert by_config.stdout.decode().startswith(ref)


def test_show_prints_the_metadata_record(stored: tuple[Path, str], toolcap: Any) -> None:
    root, ref = stored
    done = toolcap("artifacts", "show", ref[:24], "--artifacts", str(root))
    out = done.stdout.decode()
    assert done.returncode == 0
    assert f"reference:  {ref}" in out
    assert "tool:       Grep" in out
    assert "lines:      30" in out
    assert f"location:   {root / ref[8:10] / ref[8:]}" in out
    record = json.loads(toolcap("artifacts", "show", ref, "--json", "--artifacts",
                                str(root)).stdout)
    assert record["lines"] == 30 and record["partial"] is False


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], TEXT.encode()),
        (["--offset", "7", "--length", "6"], b"line 2"),
        (["--offset", str(len(TEXT))], b""),
        (["--lines", "2:3"], b"line 2\nline 3\n"),
        (["--lines", "29:"], b"line 29\nline 30\n"),
        (["--lines", ":1"], b"line 1\n"),
        (["--lines", "5"], b"line 5 ERROR\n"),
    ],
)
def test_cat_writes_the_artifact_or_a_range_of_it(
    stored: tuple[Path, str], toolcap: Any, options: list[str], expected: bytes
) -> None:
    root, ref = stored
    done = toolcap("artifacts", "cat", ref, *options, "--artifacts", str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_cat_of_a_partial_artifact_says_so_on_stderr(tmp_path: Path, toolcap: Any) -> None:
    config = tmp_path / "toolcap.toml"
    config.write_text('[store]\nmax_artifact_size = "1KB"\n')
    ref = LocalStore(tmp_path / "a", limits=StoreLimits(max_artifact_size=1024)).put(b"x" * 5000)
    done = toolcap("artifacts", "cat", ref, "--config", str(config), "--artifacts",
                   str(tmp_path / "a"))
    assert done.stdout == b"x" * 1024
    assert b"keeps only the first 512 and the last 512 bytes of 5000" in done.stderr


def test_grep_prints_numbered_matches_with_merged_context(
    stored: tuple[Path, str], toolcap: Any
) -> None:
    root, ref = stored
    done = toolcap("artifacts", "grep", ref, "ERROR", "--context", "1", "--artifacts", str(root))
    assert done.returncode == 0
    at = {n: TEXT.index(f"line {n} ERROR") + len(f"line {n} ") for n in (5, 6, 20)}
    assert done.stdout.decode().splitlines() == [
        "4-line 4", f"5:{at[5]}:line 5 ERROR", f"6:{at[6]}:line 6 ERROR", "7-line 7", "--",
        "19-line 19", f"20:{at[20]}:line 20 ERROR", "21-line 21"]


def test_grep_max_stops_early_and_says_so(stored: tuple[Path, str], toolcap: Any) -> None:
    root, ref = stored
    done = toolcap("artifacts", "grep", ref, "ERROR", "--max", "1", "--artifacts", str(root))
    assert done.stdout == f"5:{TEXT.index('ERROR')}:line 5 ERROR\n".encode()
    assert b"more exist" in done.stderr


def test_grep_without_a_match_exits_1_quietly(stored: tuple[Path, str], toolcap: Any) -> None:
    root, ref = stored
    done = toolcap("artifacts", "grep", ref, "nowhere", "--artifacts", str(root))
    assert (done.returncode, done.stdout, done.stderr) == (1, b"", b"")


def test_gc_reports_and_dry_run_keeps_everything(
    stored: tuple[Path, str], tmp_path: Path, toolcap: Any
) -> None:
    root, ref = stored
    done = toolcap("artifacts", "gc", "--dry-run", "--artifacts", str(root))
    assert done.returncode == 0
    assert "would evict 0 artifacts" in done.stdout.decode()
    report = json.loads(toolcap("artifacts", "gc", "--json", "--artifacts", str(root)).stdout)
    assert report["evicted"] == [] and report["kept"] == 1
    assert LocalStore(root).read_bytes(ref) == TEXT.encode()


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["cat", "../../etc/passwd"], 2, "not an artifact reference"),
        (["show", "toolcap:zzzzzzzzzzzzzzzzzz"], 2, "not an artifact reference"),
        (["cat", "0" * 16], 1, "no artifact toolcap:0000000000000000"),
        (["grep", "REF", "(unclosed"], 2, "invalid pattern"),
        (["grep", "REF", r"(a)\1"], 2, "not supported"),
        (["cat", "REF", "--lines", "a:b"], 2, "--lines"),
        (["cat", "REF", "--lines", "0:3"], 2, "start at 1"),
        (["cat", "REF", "--lines", "1:2", "--offset", "3"], 2, "cannot be combined"),
        (["cat", "REF", "--offset", "-3"], 2, "negative"),
        (["grep", "REF", "x", "--max", "0"], 2, "at least 1"),
    ],
)
def test_expected_errors_are_one_line_without_a_traceback(
    stored: tuple[Path, str], toolcap: Any, args: list[str], status: int, message: str
) -> None:
    root, ref = stored
    args = [ref if a == "REF" else a for a in args]
    done = toolcap("artifacts", *args, "--artifacts", str(root))
    assert done.returncode == status
    err = done.stderr.decode()
    assert message in err
    assert "Traceback" not in err
    assert done.stdout == b""
    lines = err.strip().splitlines()
    assert message in lines[-1]
    if not err.startswith("usage:"):  # argparse's own errors come after the usage text
        assert len(lines) == 1


def test_an_empty_or_missing_store_lists_nothing_and_creates_nothing(
    tmp_path: Path, toolcap: Any
) -> None:
    done = toolcap("artifacts", "ls", "--artifacts", str(tmp_path / "none"))
    assert (done.returncode, done.stdout) == (0, b"")
    assert not (tmp_path / "none").exists()


def test_verify_prints_one_line_per_damaged_artifact_and_exits_1(
    tmp_path: Path, toolcap: Any
) -> None:
    root = tmp_path / "a"
    store = LocalStore(root)
    intact = store.put(b"intact\n" * 100)
    truncated = store.put(b"truncated\n" * 100)
    changed = store.put(b"changed\n" * 100)
    store.path_of(truncated).write_bytes(b"truncated\n")
    store.path_of(changed).write_bytes(b"chanGed\n" + b"changed\n" * 99)
    done = toolcap("artifacts", "verify", "--artifacts", str(root))
    assert done.returncode == 1, done.stderr
    assert sorted(done.stdout.decode().splitlines()) == sorted([
        f"{truncated}\t10 bytes stored, 1000 recorded",
        f"{changed}\tits bytes do not match its hash",
    ])
    assert "checked 3 artifacts, 2 damaged" in done.stderr.decode()
    # What was damaged is gone (the next put of the same content restores it) ...
    again = toolcap("artifacts", "verify", "--artifacts", str(root))
    assert (again.returncode, again.stdout) == (0, b"")
    assert "checked 1 artifacts, 0 damaged" in again.stderr.decode()
    # ... and a named artifact is checked alone.
    one = toolcap("artifacts", "verify", intact[:24], "--artifacts", str(root))
    assert (one.returncode, one.stdout) == (0, b"")


def test_cat_of_a_truncated_artifact_prints_nothing_and_fails_naming_it(
    stored: tuple[Path, str], toolcap: Any
) -> None:
    root, ref = stored
    LocalStore(root).path_of(ref).write_bytes(TEXT.encode()[:10])
    shown = toolcap("artifacts", "cat", ref, "--artifacts", str(root))
    assert shown.returncode == 1
    assert shown.stdout == b""
    assert f"toolcap: error: artifact {ref} is damaged" in shown.stderr.decode()


def test_cat_with_a_reversed_line_range_is_a_usage_error(toolcap: Any) -> None:
    ref = toolcap.store().put(b"".join(b"%d\n" % n for n in range(10)))
    done = toolcap("artifacts", "cat", ref, "--lines", "5:2")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == (b"toolcap: error: --lines: the range 5:2 ends before it starts"
                           b" (write A:B, A <= B)\n")


def test_cat_past_the_end_says_so_instead_of_printing_nothing(toolcap: Any) -> None:
    ref = toolcap.store().put(b"a\nb\n")
    by_offset = toolcap("artifacts", "cat", ref, "--offset", "100")
    assert by_offset.returncode == 1
    assert by_offset.stderr.decode() == (
        f"toolcap: error: --offset 100 is past the end of {ref} (4 bytes)\n"
    )
    by_line = toolcap("artifacts", "cat", ref, "--lines", "7:")
    assert by_line.returncode == 1
    assert by_line.stderr == f"toolcap: error: --lines 7:: {ref} has 2 lines\n".encode()


def test_a_negative_size_written_as_a_separate_argument_gets_a_clear_error(
    toolcap: Any,
) -> None:
    spaced = toolcap("cap", "--limit", "-5KB", input=b"x")
    assert spaced.returncode == 2
    assert spaced.stderr == (
        b"toolcap: error: cap: --limit needs a value; write one starting with '-' as"
        b" --limit=VALUE (sizes and counts cannot be negative) (see 'toolcap cap --help')\n"
    )
    joined = toolcap("cap", "--limit=-5KB", input=b"x")
    assert joined.returncode == 2
    assert joined.stderr == (
        b"toolcap: error: --limit: invalid size '-5KB': sizes cannot be negative\n"
    )


POINTED = {"total": 3000, "results": [{"id": i, "name": f"item {i}"} for i in range(3000)]}


def _stored_document(tmp_path: Path) -> str:
    return LocalStore(tmp_path / "s").put(json.dumps(POINTED, indent=2))


def test_cat_pointer_writes_the_part_and_refuses_mixed_options(
    tmp_path: Path, toolcap: Any
) -> None:
    ref = _stored_document(tmp_path)
    root = str(tmp_path / "s")
    done = toolcap("artifacts", "cat", ref, "--pointer", "/results/7", "--artifacts", root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"id": 7, "name": "item 7"}
    done = toolcap("artifacts", "cat", ref, "--pointer", "/results", "--start", "2998",
                   "--artifacts", root)
    assert json.loads(done.stdout) == POINTED["results"][2998:]  # type: ignore[index]
    done = toolcap("artifacts", "cat", ref, "--pointer", "/nope", "--artifacts", root)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("toolcap: error: --pointer: pointer '/nope'")
    done = toolcap("artifacts", "cat", ref, "--start", "2", "--artifacts", root)
    assert done.returncode == 2
    done = toolcap("artifacts", "cat", ref, "--pointer", "", "--lines", "1:2", "--artifacts",
                   root)
    assert done.returncode == 2
