"""``toolcap compact`` and ``toolcap repair`` on the session files of real agents: Claude Code
and Codex CLI (and single JSON documents), in bounded memory."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import Toolcap
from toolcap.core._jsonspans import parse_value
from toolcap.sessions._repair import splice

DATA = Path(__file__).parent.parent / "data" / "sessions"
FIXTURES = ["claude_code.jsonl", "codex_rollout.jsonl", "codex_legacy.jsonl"]
REFERENCE = re.compile(r"toolcap:[0-9a-f]{32}")
FIVE_MB = 5 * 1024 * 1024


def copy(name: str, where: Path) -> Path:
    target = where / name
    shutil.copyfile(DATA / name, target)
    return target


def huge_last_output(name: str) -> list[dict[str, Any]]:
    """The call and the 5 MB output that broke the session, in the fixture's own shape."""
    text = "".join(f"build line {n:07d}: ✓ compiled module {n % 977}\n" for n in range(120_000))
    text = text[:FIVE_MB]
    if name == "claude_code.jsonl":
        return [
            {"parentUuid": "x", "type": "assistant", "uuid": "u-call", "message": {
                "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01Huge",
                                                  "name": "Bash", "input": {"command": "make"}}]}},
            {"parentUuid": "u-call", "type": "user", "uuid": "u-result", "message": {
                "role": "user", "content": [{"tool_use_id": "toolu_01Huge", "type": "tool_result",
                                             "content": text}]},
             "toolUseResult": {"stdout": text, "stderr": "", "interrupted": False,
                               "isImage": False}},
        ]
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_huge"}
    output = {"type": "function_call_output", "call_id": "call_huge", "output": text}
    if name == "codex_legacy.jsonl":
        return [call, output]
    return [{"timestamp": "t", "type": "response_item", "payload": call},
            {"timestamp": "t", "type": "response_item", "payload": output}]


def broken_session(name: str, where: Path) -> Path:
    source = copy(name, where)
    with source.open("a", encoding="utf-8") as stream:
        for record in huge_last_output(name):
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    return source


def output_places(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The path of each tool output and of each long string of its second copy."""
    places: list[tuple[Any, ...]] = []
    wrapped = record.get("type") == "response_item"
    item = record.get("payload", {}) if wrapped else record
    if item.get("type") in ("function_call_output", "custom_tool_call_output"):
        places.append(("payload", "output") if wrapped else ("output",))
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        places += [("message", "content", index, "content")
                   for index, block in enumerate(message["content"])
                   if block.get("type") == "tool_result"]
    if "toolUseResult" in record:
        places += list(_long_strings(record["toolUseResult"], ("toolUseResult",)))
    return places


def _long_strings(value: Any, path: tuple[Any, ...]) -> Any:
    if isinstance(value, str) and len(value.encode()) >= 1024:
        yield path
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _long_strings(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _long_strings(inner, (*path, index))


def _at(record: Any, path: tuple[Any, ...]) -> tuple[Any, Any]:
    for key in path[:-1]:
        record = record[key]
    return record, path[-1]


def stored_form(value: Any) -> bytes:
    """What the store keeps of an output: a text's UTF-8, blocks as compact JSON."""
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def assert_compacted_faithfully(toolcap: Toolcap, before: bytes, after: bytes) -> int:
    """Every line unchanged byte for byte, or the same record with outputs replaced by
    placeholders whose references give the originals back byte for byte. Returns how
    many outputs were replaced."""
    old_lines, new_lines = before.split(b"\n"), after.split(b"\n")
    assert len(old_lines) == len(new_lines)
    replaced = 0
    for old, new in zip(old_lines, new_lines, strict=True):
        if old == new:
            continue
        old_record, new_record = json.loads(old), json.loads(new)
        for path in output_places(old_record):
            (old_place, old_key) = _at(old_record, path)
            (new_place, new_key) = _at(new_record, path)
            original, placeholder = old_place[old_key], new_place[new_key]
            if original == placeholder:
                continue
            assert isinstance(placeholder, str)
            assert placeholder.startswith("[toolcap: compacted ")
            (reference,) = set(REFERENCE.findall(placeholder))
            cat = toolcap("artifacts", "cat", reference)
            assert cat.returncode == 0, cat.stderr
            assert cat.stdout == stored_form(original)
            new_place[new_key] = original
            replaced += 1
        assert new_record == old_record  # nothing else in the record changed
    return replaced


def total_outputs(toolcap: Toolcap, path: Path) -> str:
    report = toolcap("compact", str(path), "--dry-run", "--target", "1GB")
    return report.stdout.decode().splitlines()[-1].split(": ")[1].split(" → ")[0]


@pytest.mark.parametrize("name", FIXTURES)
def test_a_session_broken_by_a_5mb_last_output_is_brought_within_budget(
    toolcap: Toolcap, name: str
) -> None:
    source = broken_session(name, toolcap.home)
    before = source.read_bytes()
    result = toolcap("compact", str(source), "--target", "64KB", "--keep-recent", "8KB",
                     "--in-place")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[-1] == f"updated {source} (backup: {source}.bak)"
    assert lines[-2].startswith("compacted ")
    assert (toolcap.home / f"{name}.bak").read_bytes() == before
    after = source.read_bytes()
    assert len(before) > FIVE_MB and len(after) < 100 * 1024
    replaced = assert_compacted_faithfully(toolcap, before, after)
    assert replaced >= 2
    # Within budget: all tool outputs together now measure at most the target.
    measured = total_outputs(toolcap, source)
    number, unit = measured.split()
    assert float(number) * {"B": 1, "KB": 1024}[unit] <= 64 * 1024
    # Idempotent: compacting the result again changes nothing.
    again = toolcap("compact", str(source), "--target", "64KB", "--keep-recent", "8KB",
                    "--in-place")
    assert again.returncode == 0
    assert again.stdout.decode().splitlines()[-1] == f"{source} unchanged"
    assert source.read_bytes() == after


def test_claude_code_second_copy_shrinks_with_its_tool_result(toolcap: Toolcap) -> None:
    source = copy("claude_code.jsonl", toolcap.home)
    result = toolcap("compact", str(source), "--target", "4KB", "--keep-recent", "1KB",
                     "-o", "out.jsonl")
    assert result.returncode == 0, result.stderr
    assert [line.split()[2] for line in result.stdout.decode().splitlines()[:3]] == [
        "Read", "mcp__docs__fetch", "Bash"]
    records = [json.loads(line) for line in (toolcap.home / "out.jsonl").read_text().splitlines()]
    read = records[4]
    assert read["toolUseResult"]["file"]["numLines"] == 220  # metadata kept
    assert read["toolUseResult"]["file"]["content"].startswith("[toolcap: compacted Read")
    assert read["toolUseResult"]["file"]["filePath"] == "/home/dev/app.log"
    assert records[6]["toolUseResult"]["stdout"] == "a.txt\nb.txt — ok"  # small: not masked
    assert records[10]["toolUseResult"].startswith("[toolcap: compacted Bash")
    assert records[10]["message"]["content"][0]["is_error"] is True
    assert_compacted_faithfully(toolcap, source.read_bytes(),
                                (toolcap.home / "out.jsonl").read_bytes())


def test_codex_names_and_formats_are_reported(toolcap: Toolcap) -> None:
    rollout = toolcap("compact", str(DATA / "codex_rollout.jsonl"), "--target", "4KB",
                      "--keep-recent", "1KB")
    legacy = toolcap("compact", str(DATA / "codex_legacy.jsonl"), "--target", "4KB",
                     "--keep-recent", "1KB")
    lines = rollout.stdout.decode().splitlines()
    assert [line.split()[2] for line in lines[:2]] == ["shell", "apply_patch"]
    assert lines[-1].startswith("would compact 2 of 3 tool outputs: 20.0 KB → ")
    assert lines[-1].endswith("[Codex CLI; JSON Lines]")
    assert legacy.stdout.decode().splitlines()[-1].endswith("[OpenAI Responses; JSON Lines]")


def test_exclude_tool_and_keep_recent_protect_outputs(toolcap: Toolcap) -> None:
    source = str(DATA / "codex_rollout.jsonl")
    excluded = toolcap("compact", source, "--target", "4KB", "--keep-recent", "1KB",
                       "--exclude-tool", "shell")
    assert [line.split()[2] for line in excluded.stdout.decode().splitlines()[:-1]] == [
        "apply_patch"]
    recent = toolcap("compact", source, "--target", "4KB", "--keep-recent", "8KB")
    assert [line.split()[2] for line in recent.stdout.decode().splitlines()[:-1]] == ["shell"]


def test_dry_run_and_report_write_nothing_not_even_the_store(toolcap: Toolcap) -> None:
    source = copy("claude_code.jsonl", toolcap.home)
    before = source.read_bytes()
    for extra in ([], ["--dry-run", "--in-place"], ["--dry-run", "-o", "x.jsonl"]):
        result = toolcap("compact", str(source), "--target", "4KB", "--keep-recent", "1KB",
                         *extra)
        assert result.returncode == 0, result.stderr
        assert result.stdout.decode().splitlines()[-1].startswith("would compact 3 of 5 ")
        assert "(not written)" in result.stdout.decode()
    assert source.read_bytes() == before
    assert sorted(os.listdir(toolcap.home)) == ["claude_code.jsonl"]


def test_a_store_that_fails_masks_nothing_and_loses_nothing(toolcap: Toolcap) -> None:
    source = copy("codex_rollout.jsonl", toolcap.home)
    before = source.read_bytes()
    (toolcap.home / "a-file").write_text("not a directory")
    broken = {"TOOLCAP_ARTIFACTS": str(toolcap.home / "a-file" / "store")}
    result = toolcap("compact", str(source), "--target", "4KB", "--keep-recent", "1KB",
                     "--in-place", env=broken)
    assert result.returncode == 1
    error = result.stderr.decode()
    assert error.count("\n") == 1
    assert error.startswith("toolcap: not masked: 2 tool output(s) whose original could not be "
                            "stored (") and "nothing lost" in error
    assert result.stdout.decode().splitlines()[-2].startswith("compacted 0 of 3")
    assert source.read_bytes() == before
    assert not (toolcap.home / "codex_rollout.jsonl.bak").exists()


def test_a_last_line_cut_short_is_left_as_it_is_and_said(toolcap: Toolcap) -> None:
    source = copy("codex_rollout.jsonl", toolcap.home)
    with source.open("ab") as stream:  # the agent died in the middle of a write
        stream.write(b'{"timestamp":"t","type":"response_item","payload":{"type":"func')
    before = source.read_bytes()
    result = toolcap("compact", str(source), "--target", "4KB", "-o", "out.jsonl")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stdout.decode().splitlines() if "line 15" in line]
    assert len(said) == 1 and "cut short" in said[0] and "left as it is" in said[0]
    out = (toolcap.home / "out.jsonl").read_bytes()
    assert out.endswith(before[before.rindex(b"\n"):])


@pytest.mark.parametrize(("content", "message"), [
    (b'{"hello": 1}', "not a conversation"),
    (b'{"type":"user"}\n{"type": nope}\n{"type":"user"}\n', "line 2, column 10"),
    (b'[{"role": "user"}, 7 8]', "expected ',' or ']'"),
    (b'{"a":1}\n\xff\n', "invalid UTF-8"),
])
def test_bad_input_is_a_one_line_error_naming_the_place(
    toolcap: Toolcap, content: bytes, message: str
) -> None:
    (toolcap.home / "bad.json").write_bytes(content)
    result = toolcap("compact", "bad.json", "--target", "1KB", "--in-place")
    assert result.returncode == 2
    error = result.stderr.decode()
    assert error.count("\n") == 1 and message in error and "Traceback" not in error
    assert (toolcap.home / "bad.json").read_bytes() == content


def test_a_target_above_the_trigger_is_a_usage_error(toolcap: Toolcap) -> None:
    result = toolcap("compact", str(DATA / "codex_rollout.jsonl"), "--target", "2MB",
                     "--trigger", "1MB")
    assert result.returncode == 2
    assert b"--target" in result.stderr and result.stderr.count(b"\n") == 1


def test_measure_tokens_compacts_to_a_target_in_tokens(toolcap: Toolcap) -> None:
    source = broken_session("claude_code.jsonl", toolcap.home)
    before = source.read_bytes()
    options = ["--measure", "tokens", "--target", "4k tokens", "--keep-recent", "1k tokens"]
    result = toolcap("compact", str(source), *options, "--in-place")
    assert result.returncode == 0, result.stderr
    summary = result.stdout.decode().splitlines()[-2]
    counted = re.fullmatch(r"compacted \d+ of \d+ tool outputs: (\S+ tokens) → (\S+ tokens) "
                           r"\(trigger 4\.0k tokens, target 4\.0k tokens, counted by "
                           r"(o200k_base|estimate); .*", summary)
    assert counted, summary
    replaced = assert_compacted_faithfully(toolcap, before, source.read_bytes())
    assert replaced >= 2
    # The plan's "after" is what the file now measures: placeholders counted with their
    # real references, not the sample's.
    report = toolcap("compact", str(source), "--measure", "tokens", "--dry-run")
    assert report.stdout.decode().splitlines()[-1].split(": ")[1].startswith(
        f"{counted.group(2)} → {counted.group(2)}")
    amount = counted.group(2).removesuffix(" tokens")
    assert (float(amount[:-1]) * 1000 if amount.endswith("k") else int(amount)) <= 4000
    again = toolcap("compact", str(source), *options, "--in-place")
    assert again.stdout.decode().splitlines()[-1] == f"{source} unchanged"


def test_a_size_under_measure_tokens_is_a_usage_error(toolcap: Toolcap) -> None:
    result = toolcap("compact", str(DATA / "codex_rollout.jsonl"), "--measure", "tokens",
                     "--target", "64KB")
    assert result.returncode == 2
    assert b"'64KB' is in bytes, but the measure is tokens" in result.stderr
    assert result.stderr.count(b"\n") == 1


def write_large_session(path: Path) -> None:
    """About 96 MB of Codex rollout records, outputs of 125 KB to 500 KB."""
    block = "".join(f"log line {n:06d} — status ok\n" for n in range(4000))
    with path.open("w", encoding="utf-8") as stream:
        for n in range(400):
            stream.write(json.dumps({"type": "response_item", "payload": {
                "type": "function_call", "name": "shell", "arguments": "{}",
                "call_id": f"c{n}"}}) + "\n")
            stream.write(json.dumps({"type": "response_item", "payload": {
                "type": "function_call_output", "call_id": f"c{n}",
                "output": block * (1 + n % 4)}}) + "\n")


def peak_rss(toolcap: Toolcap, *args: str) -> tuple[int, int]:
    """Exit status and peak RSS in bytes of ``toolcap ARGS``, in a process of its own."""
    measure = ("import resource, subprocess, sys; "
               "status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
               "print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    command = shutil.which("toolcap", path=str(Path(sys.executable).parent))
    assert command is not None
    result = subprocess.run([sys.executable, "-c", measure, command, *args],
                            capture_output=True, env=toolcap.env, timeout=600, check=False)
    status, peak_kb = result.stdout.decode().split()
    return int(status), int(peak_kb) * 1024


def test_a_large_session_is_compacted_in_bounded_memory(toolcap: Toolcap) -> None:
    """About 96 MB of records of up to 500 KB: the peak RSS stays far below the file."""
    source = toolcap.home / "big.jsonl"
    write_large_session(source)
    size = source.stat().st_size
    assert size > 90 << 20
    status, peak = peak_rss(toolcap, "compact", str(source), "--target", "1MB",
                            "-o", str(toolcap.home / "out.jsonl"))
    assert status == 0
    assert peak < size / 2, f"peak RSS {peak >> 20} MB for {size >> 20} MB"
    assert (toolcap.home / "out.jsonl").stat().st_size < 4 << 20


def _content_places(document: Any, name: str) -> list[tuple[Any, str]]:
    items = document["input"] if name == "responses.json" else document
    places = []
    for item in items:
        if item.get("type") == "function_call_output":
            places.append((item, "output"))
        elif item.get("role") == "tool":
            places.append((item, "content"))
        elif item.get("role") == "user" and isinstance(item.get("content"), list):
            places += [(block, "content") for block in item["content"]
                       if block.get("type") == "tool_result"]
    return places


@pytest.mark.parametrize("name", ["responses.json", "anthropic.json", "chat.json"])
def test_a_single_json_document_is_compacted_by_its_elements(toolcap: Toolcap, name: str) -> None:
    source = toolcap.home / name
    shutil.copyfile(DATA.parent / "repair" / name, source)
    result = toolcap("compact", str(source), "--target", "2KB", "--keep-recent", "1KB",
                     "-o", "out.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines()[-2].endswith("; JSON]")
    before, after = source.read_text(), (toolcap.home / "out.json").read_text()
    located, _ = parse_value(before, 0)
    new = json.loads(after)
    edits = []
    for (old_place, key), (new_place, _) in zip(_content_places(located, name),
                                                _content_places(new, name), strict=True):
        if new_place[key] != old_place[key]:
            (reference,) = set(REFERENCE.findall(new_place[key]))
            assert toolcap("artifacts", "cat", reference).stdout == stored_form(old_place[key])
            edits.append((old_place[key], new_place[key]))
    assert len(edits) >= 2
    # Every other byte is the original's: the file is the original with those values replaced.
    assert after == splice(before, edits, ensure_ascii=before.isascii())


# -- toolcap repair on the same files ---------------------------------------------------

CUT = re.compile(r"\[toolcap: output truncated, kept [^\]]*?(toolcap:[0-9a-f]{32})")


@pytest.mark.parametrize("name", FIXTURES)
def test_repair_bounds_the_5mb_last_output_and_its_copy_leaving_every_other_line(
    toolcap: Toolcap, name: str
) -> None:
    source = broken_session(name, toolcap.home)
    before = source.read_bytes()
    result = toolcap("repair", str(source), "--over", "64KB", "--in-place")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[-1] == f"updated {source} (backup: {source}.bak)"
    assert lines[-2].startswith("bounded 1 of ")
    assert lines[0].split()[2] in ("Bash", "shell") and "5.0 MB → " in lines[0]
    after = source.read_bytes()
    assert len(before) > FIVE_MB and len(after) < 256 * 1024
    old_lines, new_lines = before.split(b"\n"), after.split(b"\n")
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [len(old_lines) - 2]  # the last record only
    old_record, new_record = json.loads(old_lines[-2]), json.loads(new_lines[-2])
    for path in output_places(old_record):
        (old_place, old_key), (new_place, new_key) = _at(old_record, path), _at(new_record, path)
        text = new_place[new_key]
        assert len(text.encode()) <= 64 * 1024
        (reference,) = CUT.findall(text)
        assert toolcap("artifacts", "cat", reference).stdout == old_place[old_key].encode()
        new_place[new_key] = old_place[old_key]
    assert new_record == old_record
    again = toolcap("repair", str(source), "--over", "64KB")
    assert again.stdout.decode().splitlines()[-1].startswith("would bound 0 of ")


def test_repair_with_a_store_that_fails_cuts_nothing(toolcap: Toolcap) -> None:
    source = broken_session("codex_rollout.jsonl", toolcap.home)
    before = source.read_bytes()
    (toolcap.home / "a-file").write_text("not a directory")
    broken = {"TOOLCAP_ARTIFACTS": str(toolcap.home / "a-file" / "store")}
    result = toolcap("repair", str(source), "--over", "64KB", "-o", "out.jsonl", env=broken)
    assert result.returncode == 1
    error = result.stderr.decode()
    assert error.count("\n") == 1 and error.startswith("toolcap: not bounded: 1 tool response")
    assert "left whole" in result.stdout.decode()
    assert (toolcap.home / "out.jsonl").read_bytes() == before


def test_repair_reads_a_last_line_cut_short_and_says_so(toolcap: Toolcap) -> None:
    source = copy("claude_code.jsonl", toolcap.home)
    with source.open("ab") as stream:
        stream.write(b'{"type":"user","message":{"role":"user","content":[{"type":"tool_re')
    result = toolcap("repair", str(source), "--over", "8KB", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "cut short" in result.stdout.decode()
    assert result.stdout.decode().splitlines()[-1].startswith("would bound 1 of 5 ")


def test_a_large_session_is_repaired_in_bounded_memory(toolcap: Toolcap) -> None:
    """The same 96 MB session: repair no longer holds the file (it held about 3x)."""
    source = toolcap.home / "big.jsonl"
    write_large_session(source)
    size = source.stat().st_size
    status, peak = peak_rss(toolcap, "repair", str(source), "--over", "64KB",
                            "-o", str(toolcap.home / "out.jsonl"))
    assert status == 0
    assert peak < size / 2, f"peak RSS {peak >> 20} MB for {size >> 20} MB"
    assert (toolcap.home / "out.jsonl").stat().st_size < size / 4
