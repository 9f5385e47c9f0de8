"""Boundary diagnostics: sizes and keyed digests, never content, paths or identifiers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from toolcap._diagnostics import ENV_VAR, STAGES, BoundaryLog, observe
from toolcap.core._json import dumps, json_size, project_json_text

SECRET = "sk-live-5f1e0c2d9a7b4e3f"
PATH = "/home/alice/projects/payroll/salaries-2026.csv"
CALL_ID = "toolu_01HXQ7Z2M4B9K3PD"
TOOL = "PayrollExport"
REFERENCE = "toolcap:0123456789abcdef0123456789abcdef"


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "debug.jsonl"
    monkeypatch.setenv(ENV_VAR, str(path))
    return path


def test_nothing_is_written_or_created_when_the_variable_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    observe("received", "model_text", "x" * 100_000, changed=True, wire_budget=10)
    assert list(tmp_path.iterdir()) == []


def test_secret_content_path_call_id_tool_and_reference_never_reach_the_log(log: Path) -> None:
    output = f"config loaded from {PATH}\napi_key = {SECRET}\n" + "row,1,2,3\n" * 20_000
    projected = project_json_text(output, 4096)
    crossings: list[tuple[str, str | bytes, bool]] = [
        ("received", output, False),
        ("size_threshold", projected, True),
        ("wire_projection", projected, True),
        ("written", dumps({"text": projected}).encode(), True),
    ]
    for stage, value, changed in crossings:
        observe(
            stage,
            "content",
            value,
            tool=TOOL,
            call_id=CALL_ID,
            artifacts=(REFERENCE,),
            changed=changed,
            wire_budget=4096,
        )
    written = log.read_text(encoding="utf-8")
    assert len(written.splitlines()) == 4
    for clear in (SECRET, PATH, "salaries", CALL_ID, TOOL, REFERENCE, "0123456789abcdef", "row,1"):
        assert clear not in written
    for event in read_events(log):
        assert event["artifacts"] == "stored"
        assert event["artifact_count"] == 1


def test_an_event_records_stage_sizes_change_and_artifact_state(log: Path) -> None:
    value = 'line "one"\n漢字😀\x00'
    observe("batch_ceiling", "model_text", value, artifacts=(), changed=True)
    observe("spill", "model_text", value, changed=True)
    none_state, undecided = read_events(log)
    assert none_state["stage"] == "batch_ceiling"
    assert none_state["representation"] == "model_text"
    assert none_state["chars"] == len(value)
    assert none_state["utf8_bytes"] == len(value.encode("utf-8"))
    assert none_state["json_bytes"] == json_size(value) == len(dumps(value).encode())
    assert none_state["changed"] is True
    assert none_state["artifacts"] == "none"
    assert none_state["artifact_count"] == 0
    assert undecided["artifacts"] == "undecided"
    assert undecided["tool_hmac"] is None
    assert undecided["call_hmac"] is None


def test_only_changed_or_over_budget_representations_are_recorded(log: Path) -> None:
    observe("received", "model_text", "small", changed=False)
    observe("received", "model_text", "small", changed=False, wire_budget=100)
    observe("received", "model_text", "x" * 98, changed=False, wire_budget=100)
    assert not log.exists()
    observe("received", "model_text", "x" * 99, changed=False, wire_budget=100)
    (event,) = read_events(log)
    assert event["json_bytes"] == 101
    assert event["over_wire_budget"] is True
    assert event["changed"] is False


def test_written_bytes_are_recorded_at_their_actual_size(log: Path) -> None:
    frame = (dumps({"jsonrpc": "2.0", "result": {"text": "漢" * 3000}}) + "\n").encode()
    observe("written", "frame", frame, changed=False, wire_budget=1024)
    (event,) = read_events(log)
    assert event["utf8_bytes"] == event["json_bytes"] == len(frame)


def test_the_same_value_gives_the_same_digest_within_a_process(log: Path) -> None:
    value = SECRET * 1000
    observe("received", "content", value, tool=TOOL, call_id=CALL_ID, changed=True)
    observe("written", "content", value, tool=TOOL, call_id=CALL_ID, changed=True)
    observe("written", "content", value + ".", tool="Other", call_id="other", changed=True)
    first, second, third = read_events(log)
    assert first["value_hmac"] == second["value_hmac"] != third["value_hmac"]
    assert first["tool_hmac"] == second["tool_hmac"] != third["tool_hmac"]
    assert first["call_hmac"] == second["call_hmac"] != third["call_hmac"]
    assert first["key_id"] == second["key_id"] == third["key_id"]
    # Domain separation: the same text as tool name and as value digests differently.
    observe("received", "content", TOOL, tool=TOOL, changed=True)
    fourth = read_events(log)[3]
    assert fourth["value_hmac"] != fourth["tool_hmac"]


def test_another_process_gives_a_different_digest_for_the_same_value(
    log: Path, tmp_path: Path
) -> None:
    observe("received", "content", SECRET, tool=TOOL, call_id=CALL_ID, changed=True)
    other = tmp_path / "other.jsonl"
    code = textwrap.dedent(
        f"""
        from toolcap._diagnostics import observe
        for _ in range(2):
            observe("received", "content", {SECRET!r}, tool={TOOL!r}, call_id={CALL_ID!r},
                    changed=True)
        """
    )
    subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, ENV_VAR: str(other)}, check=True
    )
    (mine,) = read_events(log)
    theirs_first, theirs_second = read_events(other)
    assert theirs_first["value_hmac"] == theirs_second["value_hmac"]
    assert mine["value_hmac"] != theirs_first["value_hmac"]
    assert mine["tool_hmac"] != theirs_first["tool_hmac"]
    assert mine["call_hmac"] != theirs_first["call_hmac"]
    assert mine["key_id"] != theirs_first["key_id"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_draws_its_own_key(log: Path) -> None:
    observe("received", "content", SECRET, changed=True)
    pid = os.fork()
    if pid == 0:  # the child: record the same value, then leave at once
        observe("received", "content", SECRET, changed=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    parent, child = read_events(log)
    assert parent["value_hmac"] != child["value_hmac"]
    assert parent["key_id"] != child["key_id"]


def test_the_first_mutating_stage_is_the_first_whose_digest_differs(log: Path) -> None:
    budget = 2048
    received = "result line\n" * 1000
    threshold = received  # the per-tool cap let it through
    spilled = received
    projected = project_json_text(threshold, budget)
    stages = [
        ("received", received, False),
        ("size_threshold", threshold, threshold is not received),
        ("spill", spilled, False),
        ("wire_projection", projected, projected is not threshold),
        ("written", projected, False),
    ]
    for stage, value, changed in stages:
        observe(stage, "content", value, changed=changed, wire_budget=budget)
    events = read_events(log)
    # The unchanged copy within budget after the projection is not recorded.
    recorded = [e["stage"] for e in events]
    assert recorded == ["received", "size_threshold", "spill", "wire_projection"]
    digests = [e["value_hmac"] for e in events]
    first_change = next(i for i, d in enumerate(digests) if d != digests[0])
    assert events[first_change]["stage"] == "wire_projection"
    assert events[first_change]["changed"] is True
    assert events[first_change]["json_bytes"] <= budget


def test_the_rate_limit_reports_suppressed_events_on_the_next_line(tmp_path: Path) -> None:
    path = tmp_path / "limited.jsonl"
    now = [1000.0]
    diagnostics = BoundaryLog(path, clock=lambda: now[0])
    for _ in range(60):
        diagnostics.observe("received", "content", "value", changed=True)
    events = read_events(path)
    assert len(events) == 50
    assert all("suppressed" not in e for e in events)
    now[0] += 30  # still within the minute of the first 50
    diagnostics.observe("received", "content", "value", changed=True)
    assert len(read_events(path)) == 50
    now[0] += 30.5  # the first 50 have aged out
    diagnostics.observe("spill", "content", "value", changed=True)
    diagnostics.observe("written", "content", "value", changed=True)
    events = read_events(path)
    assert len(events) == 52
    assert events[50]["suppressed"] == 11
    assert "suppressed" not in events[51]


def test_events_that_would_not_be_recorded_are_not_counted_as_suppressed(tmp_path: Path) -> None:
    path = tmp_path / "limited.jsonl"
    now = [0.0]
    diagnostics = BoundaryLog(path, clock=lambda: now[0], limit=1)
    diagnostics.observe("received", "content", "a", changed=True)
    diagnostics.observe("received", "content", "a", changed=False, wire_budget=100)
    now[0] = 61.0
    diagnostics.observe("received", "content", "a", changed=True)
    assert [e.get("suppressed") for e in read_events(path)] == [None, None]


@pytest.mark.parametrize("where", ["directory", "missing_parent", "parent_is_a_file", "full_disk"])
def test_an_unwritable_log_changes_no_result_and_raises_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "directory":
        target = tmp_path
    elif where == "missing_parent":
        target = tmp_path / "no" / "such" / "dir" / "log.jsonl"
    elif where == "parent_is_a_file":
        (tmp_path / "file").write_text("")
        target = tmp_path / "file" / "log.jsonl"
    else:
        target = Path("/dev/full")  # every write fails with ENOSPC
        if not target.exists():
            pytest.skip("no /dev/full here")
    text = "payload\n" * 50_000
    expected = project_json_text(text, 4096)
    monkeypatch.setenv(ENV_VAR, str(target))
    observe("received", "content", text, changed=False, wire_budget=4096)
    result = project_json_text(text, 4096)
    observe("wire_projection", "content", result, changed=True, wire_budget=4096)
    assert result == expected


def test_bad_arguments_never_raise_and_good_calls_still_log(log: Path) -> None:
    observe("received", "content", 12345, changed=True)  # type: ignore[arg-type]
    observe("received", "content", "x", artifacts=42, changed=True)  # type: ignore[arg-type]
    observe("received", "content", "x", changed=True, wire_budget="big")  # type: ignore[arg-type]
    observe("written", "frame", "after", changed=True)
    events = read_events(log)
    assert events, "a well-formed call after bad ones must still be logged"
    assert events[-1]["stage"] == "written"


def test_names_that_could_carry_content_are_not_written(log: Path) -> None:
    observe(f"received {SECRET}", f"text of {PATH}", "v", changed=True)
    (event,) = read_events(log)
    assert event["stage"] == "invalid"
    assert event["representation"] == "invalid"
    assert SECRET not in log.read_text()


def test_every_documented_stage_is_accepted(log: Path) -> None:
    for stage in STAGES:
        observe(stage, "model_text", "v", changed=True)
    assert [e["stage"] for e in read_events(log)] == list(STAGES)


def test_the_log_file_is_private_to_its_owner(log: Path) -> None:
    observe("received", "content", "v", changed=True)
    assert log.stat().st_mode & 0o077 == 0


def test_a_symlink_at_the_log_path_is_not_followed(log: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    log.symlink_to(victim)
    observe("received", "content", "v", changed=True)
    assert victim.read_text() == "the user's own file\n"


def test_an_existing_loose_log_file_is_tightened_to_owner_only(log: Path) -> None:
    log.write_text("")
    log.chmod(0o644)
    observe("received", "content", "v", changed=True)
    assert log.stat().st_mode & 0o777 == 0o600
    assert len(read_events(log)) == 1


def test_a_log_path_that_is_not_a_regular_file_is_not_written(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = log.with_suffix(".fifo")
    os.mkfifo(fifo)
    monkeypatch.setenv(ENV_VAR, str(fifo))
    observe("received", "content", "v", changed=True)  # returns: no reader is waited for


def test_the_file_size_bounds_the_log_across_processes(tmp_path: Path) -> None:
    import toolcap._diagnostics as diagnostics

    path = tmp_path / "full.jsonl"
    path.write_bytes(b"x" * (diagnostics.MAX_LOG_BYTES - 10))
    path.chmod(0o600)
    BoundaryLog(path).observe("received", "content", "v", changed=True)
    assert path.stat().st_size == diagnostics.MAX_LOG_BYTES - 10


def test_the_spill_stage_is_recorded_with_its_artifact(log: Path) -> None:
    from toolcap import Config, Policy, ToolResponse
    from toolcap.store import MemoryStore

    config = Config.from_mapping({"tools": {"*": {"size_threshold": "1KB"}}})
    Policy(config, sink=MemoryStore(), notices=False).finalize(
        [ToolResponse("t", "z" * 5000)])
    spills = [e for e in read_events(log) if e["stage"] == "spill"]
    assert len(spills) == 1
    assert (spills[0]["artifacts"], spills[0]["utf8_bytes"]) == ("stored", 5000)


@pytest.mark.parametrize("command", ["cap", "run"])
def test_cap_and_run_record_their_cut_and_spill(
    command: str, toolcap: Any, tmp_path: Path
) -> None:
    log = tmp_path / "debug.jsonl"
    env = {ENV_VAR: str(log), "TOOLCAP_SIZE_THRESHOLD": "1KB"}
    if command == "cap":
        done = toolcap("cap", input=b"line\n" * 2000, env=env)
    else:
        done = toolcap("run", "--", sys.executable, "-c", "print('line\\n' * 2000)", env=env)
    assert done.returncode == 0, done.stderr
    events = read_events(log)
    stages = {e["stage"]: e for e in events}
    assert stages["spill"]["artifacts"] == "stored"
    assert stages["spill"]["utf8_bytes"] >= 10_000
    assert stages["size_threshold"]["representation"] == "stream_text"
    assert stages["size_threshold"]["utf8_bytes"] <= 1024
    assert "line" not in log.read_text()
