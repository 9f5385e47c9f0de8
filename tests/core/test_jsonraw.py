"""Bytes taken from where a value was read: only where they are what ``dumps`` writes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from _strategies import json_documents, tricky_character, write_json
from toolcap.core._jsonindex import _one_string_member, index_of
from toolcap.core._jsonraw import RawStrings, canonical, dumps_utf8
from toolcap.core._jsonsize import dumps

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True)
texts = st.text(alphabet=tricky_character, max_size=80)
writers = st.sampled_from([
    lambda s: json.dumps(s),
    lambda s: json.dumps(s, ensure_ascii=False),
    lambda s: json.dumps(s, ensure_ascii=False).replace("/", "\\/"),
    lambda s: json.dumps(s).upper().replace("\\U", "\\u"),  # upper-case hex (and text)
])


@PROPERTY
@given(texts, writers)
def test_a_token_is_taken_as_canonical_only_when_it_is_the_bytes_dumps_writes(
    text: str, write: object
) -> None:
    assert callable(write)
    token = write(text)
    try:
        value = json.loads(token)
        data = token.encode("utf-8")
    except (ValueError, UnicodeEncodeError):  # a writer's upper-casing broke it, or not UTF-8
        return
    expected = dumps(value).encode("utf-8")
    if canonical(data):
        assert data == expected


@PROPERTY
@given(texts.filter(lambda s: all(not "\ud800" <= c <= "\udfff" for c in s)))
def test_what_dumps_writes_for_a_string_without_surrogates_is_canonical(text: str) -> None:
    token = dumps(text).encode("utf-8")
    assert canonical(token) or b"\\\\u" in token or b"\\\\/" in token  # a backslash before u or /


@settings(max_examples=100, deadline=None, derandomize=True)
@given(json_documents, st.sampled_from([None, "  ", "\t"]))
def test_a_document_taken_for_one_string_member_is_one(value: object, indent: str | None) -> None:
    data = write_json(value, indent).encode("utf-8", "surrogatepass")
    if _one_string_member(data):
        parsed = json.loads(data)
        assert isinstance(parsed, dict) and len(parsed) == 1
        assert isinstance(next(iter(parsed.values())), str)


def test_an_object_whose_one_member_is_a_long_string_gets_no_index_and_one_with_more_does() -> None:
    text = "a line of text\n" * 100_000
    assert index_of(dumps({"result": text}).encode()) is None
    assert index_of(json.dumps({"result": text}, indent=2).encode()) is None
    assert index_of(dumps({"result": text, "count": 3}).encode()) is not None
    assert index_of(dumps({"result": text + '"', "more": [1, 2]}).encode()) is not None


def test_without_kept_bytes_the_value_is_serialized() -> None:
    value = {"result": "x" * 100, "n": [1, 2.5, None]}
    assert dumps_utf8(value) == dumps(value).encode()
    assert dumps_utf8(value, RawStrings()) == dumps(value).encode()
