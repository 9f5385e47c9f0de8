"""Search: linear time whatever the pattern, byte offsets and lines, windows on long lines."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.store import ArtifactStore, MemoryStore, _regex, grep_rows
from toolcap.store._regex import compile_pattern
from toolcap.store._search import line_segments, search

needs_re2 = pytest.mark.skipif(not _regex.have_re2(), reason="the re2 extra is not installed")


@pytest.fixture
def store() -> ArtifactStore:
    return MemoryStore()


@needs_re2
def test_a_catastrophic_pattern_returns_at_once(store: ArtifactStore) -> None:
    ref = store.put(b"a" * 34 + b"!\n" + b"a" * 100_000 + b"!\n")
    assert store.grep(ref, "(a+)+$").matches == ()
    found = store.grep(ref, "(a+)+!$", max_line_chars=64).matches
    assert [(m.line, m.offsets) for m in found] == [(1, (0,)), (2, (36,))]


@needs_re2
@pytest.mark.parametrize("pattern", [r"(a)\1", "a(?=b)", "(?<!x)a"])
def test_backreferences_and_lookaround_are_refused_saying_why(
    store: ArtifactStore, pattern: str
) -> None:
    ref = store.put(b"aa\n")
    with pytest.raises(ValueError, match=r"not supported.*linear time"):
        store.grep(ref, pattern)


def test_without_re2_plain_text_is_searched_and_a_regex_refused(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_regex, "_re2", None)
    ref = store.put(b"a.b (x)\nA.B\n" + b"a" * 34 + b"!\n")
    assert [m.line for m in store.grep(ref, r"a\.b \(x\)").matches] == [1]
    assert [m.line for m in store.grep(ref, "a.b", fixed=True, ignore_case=True).matches] == [
        1, 2]
    with pytest.raises(ValueError, match=r"needs RE2 \(pip install 'toolcap\[re2\]'\)"):
        store.grep(ref, "(a+)+$")


def test_a_match_on_a_long_line_is_a_window_at_its_offset(store: ArtifactStore) -> None:
    head = b'{"data": "' + b"x" * 3_000_000
    data = head + b"NEEDLE" + b"y" * 500 + b"NEEDLE" + b"z" * 3_000_000 + b'"}\n'
    ref = store.put(b"first line\n" + data)
    result = store.grep(ref, "NEEDLE", max_line_chars=200)
    first = 11 + len(head)
    assert [(m.line, m.offsets) for m in result.matches] == [(2, (first,)), (2, (first + 506,))]
    for match in result.matches:
        assert match.text.startswith("[...] ") and match.text.endswith(" [...]")
        assert "NEEDLE" in match.text and len(match.text.encode()) <= 200 + 12
        inner = match.text[len("[...] "):-len(" [...]")].encode()
        assert store.read_bytes(ref, match.start, len(inner)) == inner
    rows = grep_rows(result)
    assert rows[0].startswith(f"2:{first}:[...] xxx")


def test_several_matches_on_a_short_line_are_one_row_with_each_offset(
    store: ArtifactStore,
) -> None:
    ref = store.put(b"zero\nab ab ab\n")
    (match,) = store.grep(ref, "ab").matches
    assert (match.line, match.offsets, match.text) == (2, (5, 8, 11), "ab ab ab")
    assert grep_rows(store.grep(ref, "ab")) == ["2:5,8,11:ab ab ab"]


def _naive(data: bytes, needle: bytes) -> list[tuple[int, int]]:
    """(line, offset) of each non-overlapping occurrence, line by line."""
    found = []
    offset = 0
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    for number, line in enumerate(lines, 1):
        pos = line.find(needle)
        while pos >= 0:
            found.append((number, offset + pos))
            pos = line.find(needle, pos + len(needle))
        offset += len(line) + 1
    return found


_pieces = st.lists(
    st.one_of(st.sampled_from([b"\n", b"ab", b"a", b"b", b"x", "é".encode()]),
              st.binary(max_size=8),
              st.integers(1, 400).map(lambda n: b"ab" * n)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(pieces=_pieces, needle=st.sampled_from([b"ab", b"a", b"bab", b"x", "é".encode()]),
       chunk=st.integers(1, 64), final_newline=st.booleans(), context=st.integers(0, 2))
def test_offsets_and_lines_agree_with_a_naive_scan(
    pieces: list[bytes], needle: bytes, chunk: int, final_newline: bool, context: int
) -> None:
    data = b"".join(pieces)
    if final_newline and not data.endswith(b"\n"):
        data += b"\n"
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)]
    matcher = compile_pattern(needle.decode(), fixed=True)
    segments = line_segments(chunks, long_line=48, overlap=16, skip=matcher, context=context)
    width = 16
    result = search(segments, matcher, context=context, max_matches=10_000, width=width)
    assert not result.truncated
    lines = data.split(b"\n")
    reported = []
    for match in result.matches:
        for offset in match.offsets:
            reported.append((match.line, offset))
            assert data[offset:offset + len(needle)] == needle
            # The shown text holds the match's start; its bytes are the artifact's.
            assert match.start <= offset
        inner = match.text.removeprefix("[...] ").removesuffix(" [...]")
        assert len(inner) <= max(width, len(lines[match.line - 1]))  # from at most that many bytes
        for number, text in (*match.before, *match.after):
            assert abs(number - match.line) <= context
            expected = lines[number - 1].decode("utf-8", "replace")
            assert expected.startswith(text.removesuffix(" [...]"))
    assert reported == _naive(data, needle)


@settings(max_examples=100, deadline=None)
@given(pieces=_pieces, max_matches=st.integers(1, 5))
def test_at_most_max_matches_are_reported_and_truncation_is_said(
    pieces: list[bytes], max_matches: int
) -> None:
    data = b"".join(pieces)
    store = MemoryStore()
    ref = store.put(data)
    result = store.grep(ref, "ab", max_matches=max_matches, max_line_chars=16)
    shown = sum(len(m.offsets) for m in result.matches)
    total = len(_naive(data, b"ab"))
    assert shown == min(total, max_matches)
    assert result.truncated == (total > max_matches)


@needs_re2
@settings(max_examples=300, deadline=None)
@given(pieces=_pieces, pattern=st.sampled_from([b"^ab", b"ab$", b"^b?a", b"(ab|x)", rb"\bab",
                                                b"a+b", rb"x\s*a"]),
       chunk=st.integers(1, 64), context=st.integers(0, 2))
def test_regular_expressions_match_line_by_line_as_re_does_on_each_line(
    pieces: list[bytes], pattern: bytes, chunk: int, context: int
) -> None:
    data = b"".join(pieces)
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)]
    matcher = compile_pattern(pattern.decode())
    segments = line_segments(chunks, long_line=48, overlap=16, skip=matcher, context=context)
    result = search(segments, matcher, context=context, max_matches=10_000, width=16)
    expected = []
    offset = 0
    for number, line in enumerate(data.split(b"\n"), 1):
        # These patterns cannot backtrack badly, and their matches are short.
        expected += [(number, offset + m.start()) for m in re.finditer(pattern, line)]
        offset += len(line) + 1
    assert [(m.line, o) for m in result.matches for o in m.offsets] == expected
