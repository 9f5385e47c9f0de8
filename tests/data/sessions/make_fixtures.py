"""Regenerate the agent session fixtures: python make_fixtures.py (from this directory).

The shapes follow public community descriptions of files these agents write (their
formats are not formally documented):

* Claude Code transcripts, CLI 2.1.x: the session JSON Schemas of
  github.com/oneryalcin/agent-schemas (claude-code/v2.1.1 … v2.1.144: records
  ``user``/``assistant``/``summary``/``file-history-snapshot``/``system``; a
  ``tool_result`` block's content a string or a list of text/image items;
  ``toolUseResult`` an object, a string or a list of content items), and the notes
  of github.com/DRMacIver/claude-reliability (notes/transcript-format.md: Read's
  ``toolUseResult.file``) and Huntehhh/claude-code-chat (docs/claude-cli-jsonl-format.md).
* Codex CLI rollouts, CLI 0.4x–0.6x: github.com/kvsankar/agent-history
  (docs/codex-format.md), jnarowski/agentcmd (.agent/research/codex/
  format-comparison.md: ``session_meta``/``response_item``/``event_msg``/
  ``turn_context`` records, ``function_call_output`` whose output is a JSON text)
  and Sinity/polylogue (docs/providers/openai-codex.md: the older rollouts without
  the ``payload`` wrapper, a first line of session fields, ``record_type: "state"``).

Outputs of 6 KB or more are "big"; the rest small, with non-ASCII text, so that
an untouched-bytes check means something. Keys are written in the agents' order,
compactly, one record a line, as they write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SESSION = "5a0ddcd0-5487-4794-99ac-143f6bb9e248"


def big(label: str, lines: int = 200) -> str:
    return "".join(f"{label} line {n:04d}: lorem ipsum dolor sit amet\n" for n in range(lines))


def numbered(text: str) -> str:
    """Read's tool_result: the file with right-aligned line numbers and an arrow."""
    return "".join(f"{n:>6}→{line}\n" for n, line in enumerate(text.splitlines(), 1))


class Claude:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.count = 0

    def _base(self, kind: str) -> dict[str, Any]:
        self.count += 1
        uuid = f"00000000-0000-4000-8000-{self.count:012d}"
        record = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
                  "cwd": "/home/dev/projet-été", "sessionId": SESSION, "version": "2.1.59",
                  "gitBranch": "main", "type": kind}
        self.parent = uuid
        record["uuid"] = uuid
        return record

    def user(self, text: str) -> None:
        record = self._base("user")
        record["message"] = {"role": "user", "content": text}
        record["timestamp"] = f"2026-01-20T11:57:{self.count:02d}.716Z"
        self.records.append(record)

    def call(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        record = self._base("assistant")
        record["message"] = {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_01{call_id[-6:]}",
            "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 4, "cache_creation_input_tokens": 1200,
                      "cache_read_input_tokens": 14000, "output_tokens": 90,
                      "service_tier": "standard"}}
        record["requestId"] = f"req_011C{call_id[-6:]}"
        record["timestamp"] = f"2026-01-20T11:58:{self.count:02d}.102Z"
        self.records.append(record)

    def result(self, call_id: str, content: Any, copy: Any, *, error: bool = False) -> None:
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result",
                                 "content": content}
        if error:
            block["is_error"] = True
        record = self._base("user")
        record["message"] = {"role": "user", "content": [block]}
        record["timestamp"] = f"2026-01-20T11:59:{self.count:02d}.300Z"
        record["toolUseResult"] = copy
        self.records.append(record)

    def text(self, text: str) -> None:
        record = self._base("assistant")
        record["message"] = {"model": "claude-sonnet-4-5-20250929", "id": "msg_01end",
                             "type": "message", "role": "assistant",
                             "content": [{"type": "text", "text": text}],
                             "stop_reason": "end_turn", "stop_sequence": None}
        record["timestamp"] = "2026-01-20T12:00:00.000Z"
        self.records.append(record)


def claude_code() -> list[dict[str, Any]]:
    session = Claude()
    session.records.append({"type": "summary", "summary": "Lire le journal — café ☕",
                            "leafUuid": "00000000-0000-4000-8000-000000000099"})
    session.records.append({"type": "file-history-snapshot", "messageId": "m-1", "snapshot": {
        "messageId": "m-1", "trackedFileBackups": {}, "timestamp": "2026-01-20T11:57:00Z"},
        "isSnapshotUpdate": False})
    session.user("Read app.log, list the files, then fetch the docs. 日本語でも。")
    source = big("app.log", 220)
    session.call("toolu_01Read0000000000000001", "Read", {"file_path": "/home/dev/app.log"})
    session.result("toolu_01Read0000000000000001", numbered(source), {
        "type": "text", "file": {"filePath": "/home/dev/app.log", "content": source,
                                 "numLines": 220, "startLine": 1, "totalLines": 220}})
    session.call("toolu_01Bash0000000000000002", "Bash", {"command": "ls", "description": "ls"})
    session.result("toolu_01Bash0000000000000002", "a.txt\nb.txt — ok", {
        "stdout": "a.txt\nb.txt — ok", "stderr": "", "interrupted": False, "isImage": False})
    session.call("toolu_01Mcp00000000000000003", "mcp__docs__fetch", {"url": "https://x.test"})
    page = big("page", 180)
    session.result("toolu_01Mcp00000000000000003", [{"type": "text", "text": page}],
                   [{"type": "text", "text": page}])
    session.call("toolu_01Bash0000000000000004", "Bash", {"command": "make test"})
    log = big("make", 160)
    session.result("toolu_01Bash0000000000000004", f"Exit code 2\n{log}",
                   f"Error: Exit code 2\n{log}", error=True)
    session.call("toolu_01Grep0000000000000005", "Grep", {"pattern": "TODO"})
    session.result("toolu_01Grep0000000000000005", "src/a.py:3: TODO — later", {
        "mode": "content", "numFiles": 1, "filenames": [], "content": "src/a.py:3: TODO — later",
        "numLines": 1})
    session.text("Terminé : voilà le résumé.")
    return session.records


def codex() -> list[dict[str, Any]]:
    def line(kind: str, payload: dict[str, Any], second: int) -> dict[str, Any]:
        return {"timestamp": f"2025-10-29T00:59:{second:02d}.317Z", "type": kind,
                "payload": payload}

    def shell_output(text: str, code: int = 0) -> str:
        return json.dumps({"output": text, "metadata": {"exit_code": code,
                                                          "duration_seconds": 0.4}})

    return [
        line("session_meta", {"id": "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5",
                              "timestamp": "2025-10-29T00:59:38.308Z",
                              "cwd": "/home/dev/projet-été", "originator": "codex_cli_rs",
                              "cli_version": "0.46.0", "instructions": None, "source": "cli",
                              "model_provider": "openai", "git": {}}, 0),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>…</environment_context>"}]}, 1),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "run the tests, then patch — s'il te plaît"}]}, 1),
        line("event_msg", {"type": "user_message", "message": "run the tests", "kind": "plain"},
             1),
        line("turn_context", {"cwd": "/home/dev/projet-été", "approval_policy": "on-request",
                              "sandbox_policy": {"mode": "workspace-write"},
                              "model": "gpt-5-codex", "effort": "high", "summary": "auto"}, 2),
        line("response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "**Running tests**"}], "content": None,
            "encrypted_content": "gAAAAABo…"}, 3),
        line("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps(
            {"command": ["bash", "-lc", "pytest"], "workdir": "/home/dev"}),
            "call_id": "call_pytest01"}, 4),
        line("response_item", {"type": "function_call_output", "call_id": "call_pytest01",
                               "output": shell_output(big("pytest", 300), 1)}, 9),
        line("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps(
            {"command": ["bash", "-lc", "ls"]}), "call_id": "call_ls02"}, 10),
        line("response_item", {"type": "function_call_output", "call_id": "call_ls02",
                               "output": shell_output("README.md\nsrc — ok\n")}, 10),
        line("response_item", {"type": "custom_tool_call", "status": "completed",
                               "call_id": "call_patch03", "name": "apply_patch",
                               "input": "*** Begin Patch\n*** End Patch\n"}, 11),
        line("response_item", {"type": "custom_tool_call_output", "call_id": "call_patch03",
                               "output": big("patch", 150)}, 12),
        line("event_msg", {"type": "token_count", "info": None}, 12),
        line("response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Fini — les tests passent."}]}, 13),
    ]


def codex_legacy() -> list[dict[str, Any]]:
    return [
        {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-07-10T10:00:00.000Z",
         "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "show me the log — merci"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cat\",\"x\"]}",
         "call_id": "call_cat01"},
        {"type": "function_call_output", "call_id": "call_cat01", "output": json.dumps(
            {"output": big("x.log", 250), "metadata": {"exit_code": 0,
                                                       "duration_seconds": 0.1}})},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
         "call_id": "call_ls02"},
        {"type": "function_call_output", "call_id": "call_ls02", "output": "a\nb\n"},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Voilà."}]},
    ]


def write(name: str, records: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
                   for record in records)
    (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write("claude_code.jsonl", claude_code())
    write("codex_rollout.jsonl", codex())
    write("codex_legacy.jsonl", codex_legacy())
