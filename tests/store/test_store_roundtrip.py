"""Every store kind: put and read back, byte and line ranges at the edges, search, refs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import reference_of
from toolcap.store import (
    ArtifactNotFoundError,
    ArtifactStore,
    InvalidReferenceError,
    MemoryStore,
    parse_ref,
)

PROPERTY = settings(deadline=None, derandomize=True, max_examples=60,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

ROUND_TRIPS = {
    "empty": b"",
    "one byte": b"x",
    "one newline": b"\n",
    "text": "grüße, 世界 🎉\nzweite Zeile\n".encode(),
    "not utf-8": bytes(range(256)) * 3,
    "nul bytes": b"a\x00b\x00\n\x00",
    "multi-megabyte": os.urandom(3 * 1024 * 1024 + 7),
}


@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_put_then_read_returns_the_same_bytes_under_their_sha256(
    store: ArtifactStore, name: str
) -> None:
    data = ROUND_TRIPS[name]
    ref = store.put(data, tool="Read")
    digest = hashlib.sha256(data).hexdigest()
    assert ref == reference_of(data)
    assert len(ref) < 80
    assert store.read_bytes(ref) == data
    info = store.stat(ref)
    assert (info.ref, info.sha256, info.bytes, info.original_bytes, info.tool) == (
        ref, digest, len(data), len(data), "Read")
    assert not info.partial


def test_str_is_stored_as_its_utf8_bytes(store: ArtifactStore) -> None:
    text = "naïve ☃ text\n"
    ref = store.put(text)
    assert ref == store.put(text.encode())
    assert store.read_bytes(ref).decode() == text


def test_lone_surrogates_in_str_are_stored_as_replacement_characters(
    store: ArtifactStore,
) -> None:
    ref = store.put("a\ud800b")
    assert store.read_bytes(ref) == "a\ufffdb".encode()


def test_the_same_content_gives_the_same_reference_and_one_artifact(
    store: ArtifactStore,
) -> None:
    first = store.put(b"same", tool="A")
    second = store.put(b"same", tool="B")
    assert first == second
    assert [info.ref for info in store.list_artifacts()] == [first]
    assert store.stat(first).tool == "A"  # the record is written once too


def test_memory_store_counts_one_write_for_repeated_content() -> None:
    store = MemoryStore()
    for _ in range(3):
        store.put(b"payload")
    assert store.writes == 1


DATA = b"0123456789"


@pytest.mark.parametrize(
    ("offset", "length", "expected"),
    [
        (0, None, DATA),
        (0, 0, b""),
        (0, 1, b"0"),
        (9, 1, b"9"),
        (9, 5, b"9"),
        (10, 1, b""),
        (10, None, b""),
        (11, 3, b""),
        (3, 4, b"3456"),
        (0, 10, DATA),
        (0, 100, DATA),
    ],
)
def test_byte_ranges_clip_at_the_end(
    store: ArtifactStore, offset: int, length: int | None, expected: bytes
) -> None:
    ref = store.put(DATA)
    assert store.read_bytes(ref, offset, length) == expected


def test_negative_offsets_and_lengths_are_refused(store: ArtifactStore) -> None:
    ref = store.put(DATA)
    with pytest.raises(Exception, match="negative"):
        store.read_bytes(ref, -1, 2)
    with pytest.raises(Exception, match="negative"):
        store.read_bytes(ref, 0, -2)


@given(data=st.binary(max_size=3000), offset=st.integers(0, 3100),
       length=st.one_of(st.none(), st.integers(0, 3100)))
@PROPERTY
def test_any_byte_range_equals_the_slice(
    data: bytes, offset: int, length: int | None
) -> None:
    store = MemoryStore()
    ref = store.put(data)
    end = None if length is None else offset + length
    assert store.read_bytes(ref, offset, length) == data[offset:end]


LINES = b"one\ntwo\n\nfour\nfive"


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (1, None, ["one", "two", "", "four", "five"]),
        (1, 1, ["one"]),
        (5, 5, ["five"]),
        (5, None, ["five"]),
        (6, None, []),
        (4, 100, ["four", "five"]),
        (3, 3, [""]),
        (3, 2, []),
    ],
)
def test_line_ranges_are_one_based_inclusive_and_clip(
    store: ArtifactStore, start: int, end: int | None, expected: list[str]
) -> None:
    ref = store.put(LINES)
    assert store.read_lines(ref, start, end) == expected
    assert store.stat(ref).lines == 5


def test_a_final_newline_does_not_add_a_line(store: ArtifactStore) -> None:
    ref = store.put(b"a\nb\n")
    assert store.read_lines(ref) == ["a", "b"]
    assert store.stat(ref).lines == 2
    empty = store.put(b"")
    assert store.read_lines(empty) == []
    assert store.stat(empty).lines == 0


def test_line_numbers_below_one_are_refused(store: ArtifactStore) -> None:
    ref = store.put(LINES)
    with pytest.raises(Exception, match="start at 1"):
        store.read_lines(ref, 0, 2)


@given(lines=st.lists(st.text(alphabet="ab\r é", max_size=40), max_size=30),
       trailing=st.booleans(), start=st.integers(1, 35), span=st.integers(0, 35))
@PROPERTY
def test_line_ranges_match_splitting_the_text(
    lines: list[str], trailing: bool, start: int, span: int
) -> None:
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    store = MemoryStore()
    ref = store.put(text)
    expected = text.split("\n")
    if expected and expected[-1] == "":
        expected.pop()
    assert store.read_lines(ref, start, start + span) == expected[start - 1 : start + span]
    assert store.stat(ref).lines == len(expected)


def test_lines_longer_than_a_read_chunk_stay_whole(store: ArtifactStore) -> None:
    long = b"x" * (2 * 1024 * 1024 + 3)
    ref = store.put(b"first\n" + long + b"\nlast")
    assert store.read_lines(ref, 2, 3) == [long.decode(), "last"]


GREP = "\n".join(f"line {n}" + (" ERROR" if n in (3, 4, 10, 30) else "") for n in range(1, 41))


def test_grep_finds_matching_lines_with_numbers(store: ArtifactStore) -> None:
    ref = store.put(GREP)
    result = store.grep(ref, "ERROR")
    assert [(m.line, m.text) for m in result.matches] == [
        (3, "line 3 ERROR"), (4, "line 4 ERROR"), (10, "line 10 ERROR"), (30, "line 30 ERROR")]
    assert not result.truncated


def test_grep_context_gives_lines_before_and_after_clipped_at_the_edges(
    store: ArtifactStore,
) -> None:
    ref = store.put(GREP)
    result = store.grep(ref, r"line (3|40)\b", context=2)
    first, last = result.matches
    assert first.before == ((1, "line 1"), (2, "line 2"))
    assert first.after == ((4, "line 4 ERROR"), (5, "line 5"))
    assert last.before == ((38, "line 38"), (39, "line 39"))
    assert last.after == ()


def test_grep_stops_at_max_matches_and_says_more_exist(store: ArtifactStore) -> None:
    ref = store.put(GREP)
    result = store.grep(ref, "ERROR", max_matches=2, context=1)
    assert [m.line for m in result.matches] == [3, 4]
    assert result.matches[-1].after == ((5, "line 5"),)
    assert result.truncated
    exact = store.grep(ref, "ERROR", max_matches=4)
    assert not exact.truncated


def test_grep_options_ignore_case_fixed_strings_and_long_lines(store: ArtifactStore) -> None:
    ref = store.put("a.b\naxb\nA.B\n" + "y" * 5000 + "\n")
    assert [m.line for m in store.grep(ref, "a.b", fixed=True).matches] == [1]
    assert [m.line for m in store.grep(ref, "a.b").matches] == [1, 2]
    assert [m.line for m in store.grep(ref, "a.b", ignore_case=True, fixed=True).matches] == [
        1, 3]
    (long,) = store.grep(ref, "^y+$", max_line_chars=100).matches
    assert long.text == "y" * 100 + " [...]"


def test_grep_reads_bytes_that_are_not_utf8(store: ArtifactStore) -> None:
    ref = store.put(b"ok\nbad \xff\xfe here\n")
    (match,) = store.grep(ref, "here").matches
    assert match.text == "bad \ufffd\ufffd here"


def test_grep_refuses_a_bad_pattern_with_value_error(store: ArtifactStore) -> None:
    ref = store.put(GREP)
    with pytest.raises(ValueError, match="invalid pattern"):
        store.grep(ref, "(unclosed")


def test_a_prefix_of_sixteen_hex_digits_resolves_with_or_without_the_scheme(
    store: ArtifactStore,
) -> None:
    ref = store.put(b"resolve me")
    digest = store.stat(ref).sha256
    for spelling in (ref, ref[:24], digest[:16], digest, digest.upper(), "toolcap:" + digest):
        assert store.resolve(spelling) == ref
        assert store.read_bytes(spelling) == b"resolve me"


def test_unknown_references_raise_not_found(store: ArtifactStore) -> None:
    store.put(b"something")
    with pytest.raises(ArtifactNotFoundError):
        store.read_bytes("toolcap:" + "0" * 32)
    with pytest.raises(ArtifactNotFoundError):
        store.stat("f" * 16)
    wrong_tail = store.stat(store.put(b"x")).sha256[:40] + "0" * 24
    with pytest.raises(ArtifactNotFoundError):
        store.resolve(wrong_tail)


MALFORMED = [
    "",
    "toolcap:",
    "../../etc/passwd",
    "toolcap:../../etc/passwd",
    "toolcap:0123456789abcde",  # 15 digits
    "0123456789abcdeg",
    "toolcap:" + "a" * 65,
    "toolcap:" + "a" * 16 + "/",
    "toolcap:" + "a" * 16 + "\n",
    " toolcap:" + "a" * 16,
    "toolcap:" + "a" * 15 + "\x00",
    "toolcap:" + "٣" * 16,  # unicode digits are not hex
    "TOOLCAP:" + "a" * 16,
    "aa/" + "a" * 30,
]


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_references_are_refused_before_any_lookup(
    store: ArtifactStore, bad: str
) -> None:
    with pytest.raises(InvalidReferenceError):
        parse_ref(bad)
    for operation in (store.resolve, store.stat, store.read_bytes, store.delete):
        with pytest.raises(InvalidReferenceError):
            operation(bad)


def test_list_is_newest_first_and_delete_removes(store: ArtifactStore) -> None:
    clock_values = iter([100.0, 200.0, 300.0])
    store.clock = lambda: next(clock_values)
    refs = [store.put(f"artifact {n}".encode()) for n in range(3)]
    assert [info.ref for info in store.list_artifacts()] == refs[::-1]
    store.delete(refs[1][:24])
    assert [info.ref for info in store.list_artifacts()] == [refs[2], refs[0]]
    with pytest.raises(ArtifactNotFoundError):
        store.read_bytes(refs[1])


def test_metadata_never_contains_the_content(store: ArtifactStore) -> None:
    secret = b"AKIA-SECRET-TOKEN-1234"
    ref = store.put(secret, tool="Bash")
    record = repr(store.stat(ref).record())
    assert "SECRET" not in record
    assert store.stat(ref).to_dict()["ref"] == ref


def test_reading_records_the_last_read_time(store: ArtifactStore) -> None:
    now = [1000.0]
    store.clock = lambda: now[0]
    ref = store.put(b"read me")
    assert store.stat(ref).last_read == 1000.0
    now[0] = 5000.0
    store.read_bytes(ref, 0, 2)
    assert store.stat(ref).last_read == 5000.0
    assert store.stat(ref).created == 1000.0


def test_a_file_url_store_in_a_folder_that_does_not_exist_yet_makes_it(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    from toolcap.store import FsspecStore

    for url in (f"file://{tmp_path}/new/store", str(tmp_path / "plain" / "path")):
        store = FsspecStore(url)
        ref = store.put(b"line one\nline two\n", tool="Read")
        assert store.read_bytes(ref) == b"line one\nline two\n"
        assert [info.id for info in store.list_artifacts()] == [parse_ref(ref)]
