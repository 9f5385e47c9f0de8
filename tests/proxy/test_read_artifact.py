"""read_artifact's byte reads: whole characters, no paths, no overflow, media named."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._artifact import read_artifact_result
from toolcap.store import LocalStore

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def _read(store: LocalStore, **arguments: object) -> tuple[str, str, bool]:
    result = read_artifact_result(store, arguments)
    texts = [block["text"] for block in result["content"]]
    failed = bool(result.get("isError"))
    # Nothing visible read: the note is the only block (no empty text block is sent).
    read = texts[0] if failed or len(texts) > 1 else ""
    return read, texts[-1], failed


def test_errors_do_not_show_the_store_location(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "kept-here"))
    ref = store.put(b"hello\n")
    stored = Path(store.stat(ref).location or "")
    stored.unlink()
    stored.symlink_to(tmp_path / "elsewhere")  # refused, and the refusal names the file
    text, _, failed = _read(store, ref=ref)
    assert failed and text.startswith("read_artifact: ")
    assert str(tmp_path) not in text


def test_an_unknown_reference_does_not_show_the_store_location(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "kept-here"))
    text, _, failed = _read(store, ref="toolcap:" + "ab" * 16)
    assert failed and str(tmp_path) not in text


def test_a_huge_offset_is_an_error_naming_the_end(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "s"))
    ref = store.put(b"0123456789")
    text, _, failed = _read(store, ref=ref, offset=10**30)
    assert failed
    assert text == f"read_artifact: offset {10**30} is past the end of {ref} (10 bytes)"


def test_a_range_splitting_a_character_is_widened_and_says_so(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "s"))
    ref = store.put("aé€😀z".encode())  # 1, 2, 3 and 4 bytes
    text, note, failed = _read(store, ref=ref, offset=2, length=4)
    assert not failed
    assert text == "é€"
    assert note.startswith("[bytes 1–6 of ")
    assert "asked for 2–6, widened to whole characters" in note


def test_a_read_of_white_space_only_is_one_note_saying_so(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path))
    ref = store.put(b"   \n\n\t\n" + b"x" * 100)
    result = read_artifact_result(store, {"ref": ref, "offset": 0, "length": 7})
    (only,) = result["content"]  # a text block without visible text is refused by model APIs
    assert only["text"].startswith("[bytes 0–7 of ") and "7 characters of white space" in only[
        "text"]
    assert not result.get("isError")


def test_a_stored_image_is_named_not_shown_as_text(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "s"))
    ref = store.put(PNG)
    text, _, failed = _read(store, ref=ref)
    assert failed
    assert text == (
        f"read_artifact: {ref} is a PNG image (10.0 KB), not text; it cannot be shown here."
    )


@settings(deadline=None, max_examples=200)
@given(
    text=st.text(min_size=1, max_size=60),
    offset=st.integers(min_value=0, max_value=250),
    length=st.integers(min_value=1, max_value=250),
)
def test_byte_reads_are_whole_characters_covering_the_request(
    tmp_path_factory: object, text: str, offset: int, length: int
) -> None:
    data = text.encode("utf-8", "surrogatepass")
    if "\ufffd" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return  # only valid UTF-8 can be checked against its decoding
    store = _STORE
    ref = store.put(data)
    got, note, failed = _read(store, ref=ref, offset=offset, length=length)
    if offset > len(data):
        assert failed
        return
    shown = re.match(r"\[bytes (\d+)–(\d+)", note)
    assert shown is not None
    first, last = int(shown[1]), int(shown[2])
    assert first <= offset and last >= min(len(data), offset + length)
    if not got:  # the note alone: what was read is empty or white space, and it says so
        assert not data[first:last].decode().strip()
        assert first == last or "white space only" in note
        return
    assert got.encode() == data[first:last]  # nothing replaced, nothing invented
    assert "\ufffd" not in got


_STORE = LocalStore(__import__("tempfile").mkdtemp(prefix="toolcap-read-artifact-"))
