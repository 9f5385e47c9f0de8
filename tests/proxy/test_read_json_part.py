"""Reading a JSON original back by pointer: read_artifact and ``artifacts cat --pointer``."""

from __future__ import annotations

import json
from pathlib import Path

from toolcap import Config, Policy, ToolResponse
from toolcap.core._jsondoc import resolve_pointer
from toolcap.proxy._artifact import read_artifact_result
from toolcap.store import LocalStore

DOCUMENT = {"total": 3000, "results": [{"id": i, "name": f"item {i}"} for i in range(3000)],
            "meta": {"a/b": {"~x": [1, 2.50, None]}}}


def _read(store: LocalStore, **arguments: object) -> tuple[str, str, bool]:
    result = read_artifact_result(store, arguments)
    texts = [block["text"] for block in result["content"]]
    failed = bool(result.get("isError"))
    # Nothing visible read: the note is the only block (no empty text block is sent).
    read = texts[0] if failed or len(texts) > 1 else ""
    return read, texts[-1], failed


def _cut_and_stored(tmp_path: Path) -> tuple[LocalStore, str, str]:
    """A document cut by the seam, and the reference its notes name."""
    store = LocalStore(str(tmp_path / "s"))
    policy = Policy(Config(), sink=store, notices=False)
    (result,) = policy.finalize([ToolResponse("t", json.dumps(DOCUMENT, indent=2))])
    assert result.artifacts is not None and result.text is not None
    return store, result.artifacts[0], result.text


def test_the_pointer_a_note_names_reads_back_that_item(tmp_path: Path) -> None:
    store, ref, delivered = _cut_and_stored(tmp_path)
    (note,) = [item for item in json.loads(delivered)["results"] if isinstance(item, str)]
    first = note.split("(")[1].split(" … ")[0]
    assert ref in note
    text, info, failed = _read(store, ref=ref, pointer=first)
    assert not failed
    assert json.loads(text) == resolve_pointer(DOCUMENT, first)
    assert info.startswith(f"[object at {first} of {ref}")


def test_an_item_range_of_an_array_comes_back_as_an_array(tmp_path: Path) -> None:
    store, ref, _ = _cut_and_stored(tmp_path)
    text, info, failed = _read(store, ref=ref, pointer="/results", start=500, count=3)
    assert not failed
    assert json.loads(text) == DOCUMENT["results"][500:503]  # type: ignore[index]
    assert "items 500–502 of the 3000 at /results" in info


def test_escaped_pointer_tokens_and_numbers_as_written(tmp_path: Path) -> None:
    store, ref, _ = _cut_and_stored(tmp_path)
    text, _, failed = _read(store, ref=ref, pointer="/meta/a~1b/~0x")
    assert not failed
    assert json.loads(text) == [1, 2.5, None]
    assert "2.5" in text  # json.dumps wrote 2.5; kept as written


def test_a_missing_member_or_a_range_of_an_object_is_one_clear_error(tmp_path: Path) -> None:
    store, ref, _ = _cut_and_stored(tmp_path)
    text, _, failed = _read(store, ref=ref, pointer="/results/3000")
    assert failed and "index 3000 is past the end (3000 items)" in text
    text, _, failed = _read(store, ref=ref, pointer="/meta", start=1)
    assert failed and "/meta is an object, not an array" in text
    text, _, failed = _read(store, ref=ref, pointer="results")
    assert failed and "starts with '/'" in text


def test_a_pointer_into_text_that_is_not_json_says_how_to_read_it(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "s"))
    ref = store.put(b"plain log line\n" * 10)
    text, _, failed = _read(store, ref=ref, pointer="/0")
    assert failed and "not a JSON object or array" in text


def test_the_read_artifact_description_tells_the_model_about_pointers() -> None:
    from toolcap.proxy._artifact import read_artifact_definition

    definition = read_artifact_definition("read_artifact")
    assert "pointer" in definition["inputSchema"]["properties"]
    assert "JSON Pointer" in definition["description"]
