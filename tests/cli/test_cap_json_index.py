"""A JSON document streamed through ``toolcap cap`` is stored with its index, read by pointer."""

from __future__ import annotations

import json

from helpers import REF, Toolcap
from toolcap.store import LocalStore

ITEMS = [{"id": i, "name": f"ïtem {i}", "tags": ["a", "b"]} for i in range(30_000)]


def test_a_streamed_json_original_reads_back_by_pointer_through_its_index(
    toolcap: Toolcap,
) -> None:
    document = json.dumps({"count": len(ITEMS), "items": ITEMS}, ensure_ascii=False).encode()
    assert len(document) > 1024 * 1024
    result = toolcap("cap", "--limit", "8KB", input=document)
    assert result.returncode == 0, result.stderr.decode()
    (ref,) = set(REF.findall(result.stdout.decode()))
    info = LocalStore(toolcap.artifacts).stat(ref)
    assert info.json_index is not None and "/items" in info.json_index.nodes
    part = toolcap("artifacts", "cat", ref, "--pointer", "/items/29998")
    assert part.returncode == 0, part.stderr.decode()
    assert json.loads(part.stdout) == ITEMS[29998]
    items = toolcap("artifacts", "cat", ref, "--pointer", "/items", "--start", "29990")
    assert [item["id"] for item in json.loads(items.stdout)] == list(range(29990, 30000))


def test_a_stream_that_is_not_one_document_keeps_no_index(toolcap: Toolcap) -> None:
    lines = b"".join(json.dumps(item).encode() + b"\n" for item in ITEMS)  # JSON Lines
    result = toolcap("cap", "--limit", "8KB", input=lines)
    (ref,) = set(REF.findall(result.stdout.decode()))
    assert LocalStore(toolcap.artifacts).stat(ref).json_index is None
    part = toolcap("artifacts", "cat", ref, "--pointer", "/0")
    assert part.returncode == 1 and b"not a JSON object or array" in part.stderr
