"""The wire step keeps a JSON document a document: cut by structure in escaped bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolcap import Config, Policy
from toolcap.adapters.mcp import bound_call_tool_result_dict
from toolcap.core._jsondoc import resolve_pointer
from toolcap.core._jsonsize import json_size
from toolcap.store import MemoryStore

KB = 1024
# Quotes, backslashes and line breaks: each doubles on the wire.
ESCAPED = {"rows": [{"id": i, "text": '"a\\b"\n' * 8} for i in range(2000)]}


def _notes(value: object) -> list[str]:
    if isinstance(value, dict):
        return [note for item in value.values() for note in _notes(item)]
    if isinstance(value, list):
        return [note for item in value for note in _notes(item)]
    return [value] if isinstance(value, str) and value.startswith("[toolcap: ") else []


def test_a_json_text_block_over_the_wire_budget_stays_a_document(tmp_path: Path) -> None:
    store = MemoryStore()
    policy = Policy(Config(tools={"t": "32KB"}), sink=store, notices=False)
    text = json.dumps(ESCAPED)
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    bounded = bound_call_tool_result_dict(result, policy, tool="t", wire_budget=40 * KB)
    assert bounded.changed
    sent = bounded.result["content"][0]["text"]
    assert json_size(bounded.result["content"]) <= 40 * KB
    delivered = json.loads(sent)
    assert delivered["rows"][0] == ESCAPED["rows"][0]
    (note,) = _notes(delivered)
    first = note.split("(")[1].split(" … ")[0]
    # The pointer names the original, which the named artifact holds.
    (reference,) = {ref for ref in bounded.artifacts if ref in note}
    stored = json.loads(store.read_bytes(reference))
    assert stored == ESCAPED
    assert resolve_pointer(stored, first) == ESCAPED["rows"][int(first.rsplit("/")[-1])]


def test_cap_json_keeps_a_document_within_the_wire_budget(tmp_path: Path, toolcap: Any) -> None:
    source = tmp_path / "doc.json"
    source.write_text(json.dumps(ESCAPED))
    config = tmp_path / "toolcap.toml"
    config.write_text('wire_budget = "24KB"\n[tools]\ncap = "unlimited"\n')
    done = toolcap("cap", "--json", "--no-spill", "--config", str(config), str(source))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert json_size(document["text"]) <= 24 * KB
    delivered = json.loads(document["text"])
    assert delivered["rows"][-1] == ESCAPED["rows"][-1]
    assert document["capped_by"] == "wire_budget"
