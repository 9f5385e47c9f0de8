"""The seam cuts a JSON document by structure: finalize, guard, the batch ceiling, config."""

from __future__ import annotations

import json

import pytest

from toolcap import Config, ConfigError, Policy, ToolResponse
from toolcap.core._jsondoc import MAX_STRUCTURAL_BYTES, resolve_pointer
from toolcap.store import MemoryStore

KB = 1024


def issues(count: int) -> dict[str, object]:
    return {
        "total_count": count,
        "items": [{"number": i, "title": f"Bug {i}: crash on \"save\"", "state": "open",
                   "labels": [{"name": "bug"}]} for i in range(count)],
        "next": "https://api.example.com/issues?page=2",
    }


def finalize(text: str | bytes, config: Config | None = None, *, guard: bool = False,
             sink: object = None) -> tuple[str, object]:
    policy = Policy(config or Config(), sink=sink, notices=False)  # type: ignore[arg-type]
    run = policy.guard if guard else policy.finalize
    (result,) = run([ToolResponse("t", text)])
    assert result.text is not None
    return result.text, result


@pytest.mark.parametrize("guard", [False, True])
def test_a_json_response_over_its_threshold_is_delivered_as_json(guard: bool) -> None:
    original = issues(3000)
    text, result = finalize(json.dumps(original), guard=guard)
    delivered = json.loads(text)
    assert len(text.encode()) <= 32 * KB
    assert delivered["total_count"] == 3000
    assert delivered["next"] == original["next"]  # a small sibling stays whole
    items = delivered["items"]
    assert items[0] == original["items"][0] and items[-1] == original["items"][-1]
    notes = [item for item in items if isinstance(item, str)]
    assert len(notes) == 1 and notes[0].startswith("[toolcap: ")
    assert result.capped_by == "size_threshold"  # type: ignore[attr-defined]


def test_the_elision_note_names_pointers_and_the_stored_original() -> None:
    store = MemoryStore()
    original = issues(3000)
    text, result = finalize(json.dumps(original), sink=store)
    (reference,) = result.artifacts  # type: ignore[attr-defined]
    (note,) = [item for item in json.loads(text)["items"] if isinstance(item, str)]
    first, last = note.split("(")[1].split(")")[0].split(" … ")
    assert f"; full output: {reference}]" in note
    stored = json.loads(store.read_bytes(reference))
    assert resolve_pointer(stored, first) == original["items"][int(first.rsplit("/")[-1])]
    assert resolve_pointer(stored, last)["number"] == int(last.rsplit("/")[-1])


def test_indented_output_stays_indented_when_the_budget_affords_it() -> None:
    original = {"meta": {"page": 1}, "log": "line\n" * 5000, "rows": [1, 2]}
    text, _ = finalize(json.dumps(original, indent=2), Config(tools={"t": "4KB"}))
    assert text.startswith('{\n  "meta": {\n    "page": 1\n  },\n  "log": "line\\n')
    assert text.endswith('  "rows": [\n    1,\n    2\n  ]\n}')
    assert len(text.encode()) <= 4 * KB


def test_indented_output_becomes_compact_when_indenting_would_cost_most_of_the_content() -> None:
    original = {"meta": {"page": 1}, "rows": [{"id": i} for i in range(400)]}
    text, _ = finalize(json.dumps(original, indent=2), Config(tools={"t": "4KB"}))
    assert text.startswith('{"meta":{"page":1},"rows":[{"id":0},')
    assert "\n" not in text
    assert json.loads(text)["rows"][-1] == {"id": 399}


def test_a_text_that_is_not_a_whole_document_keeps_the_text_cut() -> None:
    lines = "\n".join(json.dumps({"n": i, "msg": "x" * 40}) for i in range(2000))
    text, _ = finalize(lines)
    assert "[toolcap: output truncated" in text
    with pytest.raises(ValueError):
        json.loads(text)
    truncated = json.dumps(issues(2000))[:-1]  # no closing brace: not a document
    text, _ = finalize(truncated)
    assert "\n[toolcap: output truncated" in text


def test_format_text_turns_the_structural_cut_off_and_json_keeps_it() -> None:
    document = json.dumps(issues(2000))
    as_text, _ = finalize(document, Config(tools={"t": {"format": "text"}}))
    with pytest.raises(ValueError):
        json.loads(as_text)
    as_json, _ = finalize(document, Config(tools={"t": {"format": "json"}}))
    json.loads(as_json)


def test_an_unknown_format_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"tools\.t\.format.*unknown format 'yaml'"):
        Config.from_mapping({"tools": {"t": {"format": "yaml"}}})


def test_the_batch_ceiling_shares_a_batch_and_each_json_response_still_parses() -> None:
    policy = Policy(Config(batch_ceiling="40KB"), sink=None, notices=False)
    responses = [ToolResponse(f"t{i}", json.dumps(issues(400 * (i + 1)))) for i in range(3)]
    results = policy.finalize(responses)
    assert sum(result.delivered_bytes for result in results) <= 40 * KB
    for result in results:
        assert result.text is not None
        json.loads(result.text)


def test_finalizing_a_cut_document_again_changes_nothing() -> None:
    text, _ = finalize(json.dumps(issues(3000)))
    again, _ = finalize(text)
    assert again == text


def test_bytes_with_invalid_utf8_inside_a_document_still_give_a_document() -> None:
    data = json.dumps(issues(2000)).encode().replace(b"crash", b"cr\xffsh", 5)
    text, result = finalize(data)
    json.loads(text)
    assert result.original_bytes == len(data)  # type: ignore[attr-defined]


def test_numbers_keep_the_digits_they_were_written_with() -> None:
    document = '{"big": 1e400, "exact": 1.10, "int": 12345678901234567890, "rows": [' + ",".join(
        ['"' + "r" * 100 + '"'] * 1000) + "]}"
    text, _ = finalize(document)
    assert text.startswith('{"big": 1e400, "exact": 1.10, "int": 12345678901234567890, "rows": [')


def test_a_document_over_the_structural_bound_is_cut_as_text() -> None:
    assert MAX_STRUCTURAL_BYTES == 64 * 1024 * 1024  # the documented bound
    from toolcap.core._jsondoc import parse_document
    assert parse_document("[1]", size=MAX_STRUCTURAL_BYTES + 1) is None
    assert parse_document("[1]", size=MAX_STRUCTURAL_BYTES) is not None
