"""``toolcap repair`` on saved conversations in the three formats, JSON and JSON Lines."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import PYTHON, Toolcap
from toolcap.cli import _repair as repair_cli
from toolcap.cli import main
from toolcap.cli._common import CommandError
from toolcap.cli._files import FileState, rewrite_in_place
from toolcap.core._utf8 import utf8_size
from toolcap.sessions._repair import read_conversation

DATA = Path(__file__).parent.parent / "data" / "repair"
FIXTURES = ["chat.json", "chat.jsonl", "responses.json", "anthropic.json", "anthropic.jsonl"]
# name → (tools whose responses are over 2 KB, responses in all)
EXPECTED = {
    "chat.json": (["fs_read_file", "grep"], 3),
    "chat.jsonl": (["fs_read_file", "grep"], 3),
    "responses.json": (["shell", "fetch"], 3),
    "anthropic.json": (["read_logs", "screenshot"], 3),
    "anthropic.jsonl": (["read_logs", "screenshot"], 3),
}


def copy(name: str, where: Path) -> Path:
    target = where / name
    shutil.copyfile(DATA / name, target)
    return target


def assert_only_big_strings_changed(original: bytes, repaired: bytes, over: int) -> list[str]:
    """Every byte outside the literals of the responses over ``over`` is unchanged.

    Walks both files side by side: each untouched stretch must be identical, and each
    replaced literal must be one JSON string. Returns the new strings.
    """
    found = read_conversation(original)
    spans = sorted((p.start, p.end) for o in found.outputs if o.size > over for p in o.parts)
    old_text, new_text = original.decode(), repaired.decode()
    decoder = json.JSONDecoder()
    old_at = new_at = 0
    replaced = []
    for start, end in spans:
        stretch = old_text[old_at:start]
        assert new_text[new_at : new_at + len(stretch)] == stretch
        new_at += len(stretch)
        value, new_end = decoder.raw_decode(new_text, new_at)
        assert isinstance(value, str) and new_text[new_at] == '"'
        replaced.append(value)
        new_at, old_at = new_end, end
    assert new_text[new_at:] == old_text[old_at:]
    return replaced


@pytest.mark.parametrize("name", FIXTURES)
def test_repair_bounds_big_responses_and_leaves_every_other_byte(
    toolcap: Toolcap, name: str
) -> None:
    source = copy(name, toolcap.home)
    before = source.read_bytes()
    result = toolcap("repair", str(source), "--over", "2KB", "-o", "out" + source.suffix)
    assert result.returncode == 0, result.stderr
    assert source.read_bytes() == before
    repaired = (toolcap.home / ("out" + source.suffix)).read_bytes()
    replaced = assert_only_big_strings_changed(before, repaired, 2048)
    assert replaced and all(utf8_size(text) <= 2048 for text in replaced)
    tools, total = EXPECTED[name]
    lines = result.stdout.decode().splitlines()
    timeline = [line for line in lines if "→" in line and not line.startswith("bounded")]
    assert [line.split()[2] for line in timeline] == tools
    assert lines[len(tools)].startswith(f"bounded {len(tools)} of {total} tool responses over "
                                        "2.0 KB: ")
    # Each timeline reference names the stored original, and the marker names it too.
    after = read_conversation(repaired)
    for line in timeline:
        for reference in [word for word in line.split() if word.startswith("toolcap:")]:
            original = toolcap.store().read_bytes(reference).decode()
            assert reference in repaired.decode()
            assert any(original == str(p) for o in read_conversation(before).outputs
                       for p in o.parts)
    assert [o.tool for o in after.outputs] == [o.tool for o in read_conversation(before).outputs]
    # A second repair finds nothing left to do.
    again = toolcap("repair", "out" + source.suffix, "--over", "2KB")
    assert again.stdout.decode().startswith("would bound 0 of")


def test_timeline_line_format(toolcap: Toolcap) -> None:
    source = copy("chat.json", toolcap.home)
    result = toolcap("repair", str(source), "--over", "2KB", "-o", "out.json")
    first = result.stdout.decode().splitlines()[0]
    assert first.startswith("message 4  fs_read_file  8.9 KB → ")
    assert first.split("  ")[-1].startswith("toolcap:")


def test_report_only_and_dry_run_write_nothing_not_even_the_store(toolcap: Toolcap) -> None:
    source = copy("anthropic.json", toolcap.home)
    before = source.read_bytes()
    report = toolcap("repair", str(source), "--over", "2KB")
    dry = toolcap("repair", str(source), "--over", "2KB", "--in-place", "--dry-run")
    dry_out = toolcap("repair", str(source), "--over", "2KB", "-o", "x.json", "--dry-run")
    for result in (report, dry, dry_out):
        assert result.returncode == 0
        assert result.stdout.decode().splitlines()[-1].startswith("would bound 2 of 3 ")
        assert "(not written)" in result.stdout.decode()
    assert source.read_bytes() == before
    assert sorted(os.listdir(toolcap.home)) == ["anthropic.json"]
    # The sizes reported are those a real run gives.
    real = toolcap("repair", str(source), "--over", "2KB", "-o", "y.json")
    sizes = [line.split("  ")[2] for line in real.stdout.decode().splitlines()[:2]]
    assert sizes == [line.split("  ")[2] for line in report.stdout.decode().splitlines()[:2]]


def test_in_place_is_atomic_and_keeps_a_backup_never_overwritten(toolcap: Toolcap) -> None:
    source = copy("responses.json", toolcap.home)
    original = source.read_bytes()
    first = toolcap("repair", str(source), "--over", "2KB", "--in-place")
    assert first.returncode == 0
    backup = toolcap.home / "responses.json.bak"
    assert backup.read_bytes() == original
    assert f"updated {source} (backup: {backup})" in first.stdout.decode()
    repaired = source.read_bytes()
    assert repaired != original and json.loads(repaired)["model"] == "gpt-test"
    # Nothing left to bound: the file and its backup stay as they are.
    second = toolcap("repair", str(source), "--over", "2KB", "--in-place")
    assert "unchanged" in second.stdout.decode() and source.read_bytes() == repaired
    # A new repair with an existing backup keeps the older one.
    source.write_bytes(original)
    toolcap("repair", str(source), "--over", "2KB", "--in-place")
    assert backup.read_bytes() == original
    assert (toolcap.home / "responses.json.bak.1").read_bytes() == original
    assert not [n for n in os.listdir(toolcap.home) if n.endswith(".tmp")]


def test_tool_policy_from_config_can_bound_tighter_than_over(toolcap: Toolcap) -> None:
    source = copy("chat.json", toolcap.home)
    (toolcap.home / "toolcap.toml").write_text(
        '[tools.fs_read_file]\nsize_threshold = "1KB"\nstrategy = "head"\n')
    toolcap("repair", str(source), "--over", "2KB", "-o", "out.json")
    messages = json.loads((toolcap.home / "out.json").read_text())
    content = messages[3]["content"]
    assert utf8_size(content) <= 1024
    assert content.startswith("big.log line 0000") and "fin ✓" not in content
    assert utf8_size(messages[6]["content"][0]["text"] + messages[6]["content"][1]["text"]) > 1024


def test_no_spill_bounds_without_storing(toolcap: Toolcap) -> None:
    source = copy("chat.jsonl", toolcap.home)
    result = toolcap("repair", str(source), "--over", "2KB", "-o", "o.jsonl", "--no-spill")
    assert result.returncode == 0 and "--no-spill" in result.stdout.decode()
    assert not toolcap.artifacts.exists()


@pytest.mark.parametrize("name, where", [
    ("malformed.json", "line 3, column 19 (byte offset 57): expected ',' or '}'"),
    ("malformed.jsonl", "line 2, column 29 (byte offset 62): invalid string: unterminated"),
])
def test_malformed_input_is_a_one_line_error_naming_the_place(
    toolcap: Toolcap, name: str, where: str
) -> None:
    source = copy(name, toolcap.home)
    result = toolcap("repair", str(source), "--over", "2KB", "--in-place")
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.count(b"\n") == 1 and where in result.stderr.decode()
    assert source.read_bytes() == (DATA / name).read_bytes()


def test_invalid_utf8_names_the_byte_offset(toolcap: Toolcap) -> None:
    (toolcap.home / "bad.json").write_bytes(b'[{"role": "tool", "content": "ab\xff"}]')
    result = toolcap("repair", "bad.json", "--over", "1KB")
    assert result.returncode == 2
    assert result.stderr == b"toolcap: error: bad.json: line 1 (byte offset 32): invalid UTF-8\n"


def test_not_a_conversation_is_refused(toolcap: Toolcap) -> None:
    (toolcap.home / "x.json").write_text('{"hello": 1}')
    result = toolcap("repair", "x.json", "--over", "1KB")
    assert result.returncode == 2 and b"not a conversation" in result.stderr


def test_progress_bar_on_a_terminal_only(toolcap: Toolcap) -> None:
    pytest.importorskip("tqdm")
    big = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]}
        for i in range(3)]
    for i in range(3):
        big.append({"role": "tool", "tool_call_id": f"c{i}", "content": "z" * (3 << 20)})
    (toolcap.home / "big.json").write_text(json.dumps(big))
    primary, secondary = pty.openpty()
    seen: list[bytes] = []

    def read_terminal() -> None:
        # Read while it runs: Linux drops what a closed terminal still buffered.
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the other side is closed: all read
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    try:
        process = toolcap.popen(["repair", "big.json", "--over", "1MB"], stdout=subprocess.PIPE,
                                stderr=secondary)
        os.close(secondary)
        out, _ = process.communicate(timeout=60)
        reader.join(timeout=60)
    finally:
        os.close(primary)
    shown = b"".join(seen)
    assert b"reading" in shown and b"%" in shown
    assert out.decode().splitlines()[-1].startswith("would bound 3 of 3")
    piped = toolcap("repair", "big.json", "--over", "1MB")
    assert piped.stderr == b""


def test_an_unwritable_output_fails_before_anything_is_stored(toolcap: Toolcap) -> None:
    source = copy("chat.json", toolcap.home)
    result = toolcap("repair", str(source), "--over", "2KB", "-o", "missing/dir/out.json")
    assert result.returncode == 2 and result.stdout == b""
    assert b"cannot write in missing/dir" in result.stderr
    assert not toolcap.artifacts.exists()


APPENDED = '{"role": "user", "content": "written while repair ran"}\n'


def _append_from_another_process(path: Path) -> None:
    """Append one line to ``path`` from a separate process, and wait until it is done."""
    code = "import sys; open(sys.argv[1], 'a').write(sys.argv[2])"
    subprocess.run([PYTHON, "-c", code, str(path), APPENDED], check=True, timeout=60)


def test_in_place_refuses_rather_than_drop_a_line_appended_while_it_runs(
    toolcap: Toolcap, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = copy("chat.jsonl", toolcap.home)
    original = source.read_bytes()
    real_rewrite = repair_cli.rewrite

    def rewrite_while_another_process_appends(*args: Any, **kwargs: Any) -> Iterator[bytes]:
        # The file was read and its responses found; the new file is being written.
        pieces = real_rewrite(*args, **kwargs)
        yield next(pieces)
        _append_from_another_process(source)
        yield from pieces

    monkeypatch.setattr(repair_cli, "rewrite", rewrite_while_another_process_appends)
    monkeypatch.chdir(toolcap.home)
    for name, value in toolcap.env.items():
        if name.startswith("TOOLCAP_"):
            monkeypatch.setenv(name, value)
    status = main(["repair", str(source), "--over", "2KB", "--in-place"])
    error = capsys.readouterr().err
    assert status == 1
    assert error.count("\n") == 1 and "was written to while it was being repaired" in error
    # Nothing replaced, nothing lost, nothing left behind.
    assert source.read_bytes() == original + APPENDED.encode()
    assert sorted(os.listdir(toolcap.home)) == ["artifacts", "chat.jsonl"]
    # Run again once it is idle: the line written meanwhile is in the repaired file.
    monkeypatch.setattr(repair_cli, "rewrite", real_rewrite)
    assert main(["repair", str(source), "--over", "2KB", "--in-place"]) == 0
    assert source.read_bytes().endswith(APPENDED.encode())
    assert (toolcap.home / "chat.jsonl.bak").read_bytes() == original + APPENDED.encode()


def test_rewrite_in_place_notices_a_file_replaced_by_another_of_the_same_size(
    tmp_path: Path,
) -> None:
    source = tmp_path / "session.jsonl"
    source.write_text(APPENDED)
    read_as = FileState.of(source.stat())
    replacement = tmp_path / "other"
    replacement.write_text(APPENDED.upper())
    os.utime(replacement, ns=(read_as.modified_ns, read_as.modified_ns))
    os.replace(replacement, source)  # same size, same time: only the inode tells
    with pytest.raises(CommandError, match="was written to while it was being repaired"):
        rewrite_in_place(source, [b"[]\n"], read_as, changed=True,
                         busy="was written to while it was being repaired")
    assert source.read_text() == APPENDED.upper()
    assert sorted(os.listdir(tmp_path)) == ["session.jsonl"]
