"""A JSON original is stored with its index, in every store, and read by pointer through it."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

from toolcap.core import _jsonpart
from toolcap.core._jsonpart import select_part
from toolcap.proxy import _artifact
from toolcap.proxy._artifact import read_artifact_result
from toolcap.store import ArtifactStore, LocalStore, StoreLimits

ITEMS = 20000
DOCUMENT = {"total": ITEMS, "items": [{"id": i, "title": f"ïssue {i}", "score": 1.5}
                                      for i in range(ITEMS)]}
# About 1.7 MB, its numbers written as a server might: read back as written.
TEXT = json.dumps(DOCUMENT, indent=2, ensure_ascii=False).replace('"score": 1.5', '"score": 1.50')


def _read(store: ArtifactStore, **arguments: object) -> tuple[str, str, bool]:
    result = read_artifact_result(store, arguments)
    texts = [block["text"] for block in result["content"]]
    failed = bool(result.get("isError"))
    # Nothing visible read: the note is the only block (no empty text block is sent).
    read = texts[0] if failed or len(texts) > 1 else ""
    return read, texts[-1], failed


def test_a_big_json_original_is_read_by_pointer_through_its_index(store: ArtifactStore) -> None:
    ref = store.put(TEXT, tool="api")
    index = store.stat(ref).json_index
    assert index is not None and "/items" in index.nodes
    for where, start, count in (("/items/19998", None, None), ("/items", 19990, 5),
                                ("/items/7/title", None, None), ("/total", None, None)):
        text, note, failed = _read(store, ref=ref, pointer=where,
                                   **({} if start is None else {"start": start, "count": count}))
        assert not failed
        expected, what = select_part(TEXT, where, start, count)
        assert text == expected
        assert note.startswith(f"[{what} of {ref}")
    assert "1.50" in _read(store, ref=ref, pointer="/items/3/score")[0]  # as written


def test_the_index_is_kept_in_the_record_that_a_new_store_object_reads(tmp_path: Path) -> None:
    ref = LocalStore(tmp_path / "a").put(TEXT)
    reopened = LocalStore(tmp_path / "a")
    index = reopened.stat(ref).json_index
    assert index is not None and index == LocalStore(tmp_path / "a").stat(ref).json_index
    assert "json_index" not in reopened.stat(ref).to_dict()


def test_a_partial_original_keeps_no_index_and_is_refused_as_before(tmp_path: Path) -> None:
    limits = StoreLimits(max_artifact_size=512 * 1024, max_total_size=None)
    store = LocalStore(tmp_path / "p", limits=limits)
    ref = store.put(TEXT)
    assert store.stat(ref).partial and store.stat(ref).json_index is None
    text, _, failed = _read(store, ref=ref, pointer="/items/1")
    assert failed and "not kept whole" in text


def test_with_an_index_a_pointer_read_is_bounded_by_the_part_not_the_original(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "b")
    ref = store.put(TEXT)
    bound = 256 * 1024  # stands for the 64 MB: the original is six times over it
    with mock.patch.object(_jsonpart, "MAX_STRUCTURAL_BYTES", bound), \
         mock.patch.object(_artifact, "MAX_STRUCTURAL_BYTES", bound):
        text, _, failed = _read(store, ref=ref, pointer="/items/19999")
        assert not failed and json.loads(text) == DOCUMENT["items"][19999]  # type: ignore[index]
        text, _, failed = _read(store, ref=ref, pointer="/items", start=100, count=3)
        assert not failed and [item["id"] for item in json.loads(text)] == [100, 101, 102]
        text, _, failed = _read(store, ref=ref, pointer="")
        assert failed and "more than the 256.0 KB a pointer read parses" in text
        text, _, failed = _read(store, ref=ref, pointer="/items", start=0)
        assert failed and "deeper pointer or fewer items" in text


def test_a_streamed_write_keeps_the_index_a_put_of_the_same_bytes_keeps(
    store: ArtifactStore, tmp_path: Path
) -> None:
    data = TEXT.encode()
    with store.open_writer(tool="api") as writer:
        for at in range(0, len(data), 100_003):  # chunks that split characters and tokens
            writer.write(data[at : at + 100_003])
    streamed = store.stat(writer.ref or "").json_index
    assert streamed is not None
    assert streamed == LocalStore(tmp_path / "put").stat(
        LocalStore(tmp_path / "put").put(data)).json_index


def test_a_streamed_write_cut_to_head_and_tail_keeps_no_index(tmp_path: Path) -> None:
    limits = StoreLimits(max_artifact_size=512 * 1024, max_total_size=None)
    store = LocalStore(tmp_path / "p", limits=limits)
    with store.open_writer() as writer:
        writer.write(TEXT.encode())
    assert store.stat(writer.ref or "").json_index is None
