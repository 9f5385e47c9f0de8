"""A session file as records: JSON Lines lines, or the elements of one JSON document."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.sessions._records import PlacedError, detect_lines, placed, read_records

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='a"\\]}[{ é\n\u2028'),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(alphabet='k"\\]', max_size=3), inner, max_size=4),
    max_leaves=12)


@settings(deadline=None, max_examples=200)
@given(items=st.lists(json_values, max_size=6), indent=st.sampled_from([None, 0, 2, "\t"]),
       wrapped=st.booleans(), chunk=st.integers(1, 64))
def test_each_element_of_a_document_is_found_exactly_whatever_the_reads(
    items: list[object], indent: object, wrapped: bool, chunk: int,
) -> None:
    document = {"model": ["]", "}"], "messages": items, "after": {"x": "]"}} if wrapped else items
    data = json.dumps(document, indent=indent, ensure_ascii=False).encode()  # type: ignore[arg-type]
    records = list(read_records(io.BytesIO(data), lines=False, chunk=chunk))
    assert [json.loads(record.data) for record in records] == items
    assert all(data[r.offset : r.end] == r.data for r in records)
    assert [r.number for r in records] == list(range(1, len(items) + 1))


@pytest.mark.parametrize(("data", "message"), [
    (b'{"hello": 1}', "line 1, column 12 (byte offset 11): not a conversation"),
    (b"[1,\n 2", "line 2, column 3 (byte offset 6): expected ',' or ']'"),
    (b'[{"a": "x}]', "line 1, column 8 (byte offset 7): a string that does not end"),
    (b"[1] x", "line 1, column 5 (byte offset 4): unexpected text after the JSON value"),
    (b'{"messages": ["\xc3\xa9"]} {', "line 1, column 21 (byte offset 21): unexpected text"),
])
def test_a_document_that_is_not_a_session_names_line_column_and_byte_offset(
    data: bytes, message: str
) -> None:
    stream = io.BytesIO(data)
    with pytest.raises(PlacedError) as error:
        list(read_records(stream, lines=False))
    assert str(placed(error.value, stream)).startswith(message)


def test_json_lines_records_keep_their_line_numbers_and_say_when_cut_short() -> None:
    data = b'\xef\xbb\xbf{"a":1}\r\n\n  \n{"b":2}\n{"c":'
    records = list(read_records(io.BytesIO(data), lines=True))
    assert [(r.number, r.data, r.complete) for r in records] == [
        (1, b'{"a":1}', True), (4, b'{"b":2}', True), (5, b'{"c":', False)]
    assert all(data[r.offset : r.end] == r.data for r in records)


def test_json_lines_are_told_from_one_document_by_the_first_line() -> None:
    assert detect_lines(io.BytesIO(b'{"a":1}\n{"b":2}\n'))
    assert not detect_lines(io.BytesIO(b'{"a":\n1}\n'))
    assert not detect_lines(io.BytesIO(b'[{"a":1}]\n'))
    assert not detect_lines(io.BytesIO(b'{"messages": []}\n\n'))
