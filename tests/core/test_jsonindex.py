"""The JSON index: a part read through it is exactly the part a whole-document parse gives."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import leaves, tricky_character, write_json
from toolcap.core import _jsonindex
from toolcap.core._jsondoc import escape_token
from toolcap.core._jsonindex import HeldDocument, build_index, index_of
from toolcap.core._jsonpart import select_indexed, select_part, select_stored
from toolcap.core._jsonrecord import Container, JsonIndex, parse_index

PROPERTY = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Keys with every kind of pointer trouble: "/" and "~" (escaped ~1 and ~0), non-ASCII,
# characters JSON escapes, and the empty key.
keys = st.text(alphabet=st.one_of(st.sampled_from("ab~/01"), tricky_character), max_size=5)
documents = st.recursive(
    leaves, lambda inner: st.one_of(st.lists(inner, max_size=40),
                                    st.dictionaries(keys, inner, max_size=10)),
    max_leaves=150,
).filter(lambda value: isinstance(value, (list, dict)))


def outcome(run: Callable[..., tuple[str, str]], *arguments: object) -> tuple[str, str]:
    """What ``run(*arguments)`` gives: its answer, or its one-line error."""
    try:
        return run(*arguments)
    except ValueError as error:
        return "error", str(error)


@st.composite
def pointers(draw: st.DrawFn, value: object) -> str:
    """A pointer into ``value`` (often to an existing part, sometimes a wrong last token)."""
    where = ""
    while isinstance(value, (list, dict)) and value and draw(st.integers(0, 3)):
        if isinstance(value, list):
            index = draw(st.integers(0, len(value) - 1))
            where, value = f"{where}/{index}", value[index]
        else:
            key = draw(st.sampled_from(sorted(value)))
            where, value = f"{where}/{escape_token(key)}", value[key]
    wrong = st.sampled_from(["/nope", "/01", "/-", "/99999", "/~2", "/0/0", "/", "/²", "x"])
    return where + draw(wrong) if draw(st.integers(0, 4)) == 0 else where


def reader(data: bytes, reads: list[tuple[int, int]]) -> Callable[[int, int], bytes]:
    def read(start: int, end: int) -> bytes:
        reads.append((start, end))
        return data[start:end]
    return read


@PROPERTY
@given(data=st.data(), value=documents, indent=st.sampled_from([None, "  ", "\t"]),
       ascii_only=st.booleans(), step=st.sampled_from([1, 8, 64, 1024]),
       budget=st.sampled_from([None, 400]), members=st.sampled_from([None, 2]))
def test_a_read_through_the_index_equals_a_read_of_the_parsed_document(
    data: st.DataObject, value: object, indent: str | None, ascii_only: bool, step: int,
    budget: int | None, members: int | None,
) -> None:
    text = write_json(value, indent, ascii_only=ascii_only)
    with mock.patch.object(_jsonindex, "MAX_INDEX_BYTES", budget or _jsonindex.MAX_INDEX_BYTES), \
         mock.patch.object(_jsonindex, "MAX_MEMBERS", members or _jsonindex.MAX_MEMBERS):
        index = build_index(text, min_step=step)
    assert index is not None
    if budget is not None:
        assert len(json.dumps(index.record())) <= 2 * budget + 200 or len(index.nodes) == 1
    # Kept and read back as a store does: the record, as JSON, parsed again.
    again = parse_index(json.loads(json.dumps(index.record())), len(text.encode()))
    assert again == index
    parsed = json.loads(text)
    stored = text.encode()
    for _ in range(3):
        where = data.draw(pointers(parsed))
        start = data.draw(st.one_of(st.none(), st.integers(0, 45)))
        count = data.draw(st.one_of(st.none(), st.integers(1, 10)))
        expected = outcome(select_part, text, where, start, count)
        got = outcome(select_indexed, index, reader(stored, []), where, start, count)
        assert got == expected, (where, start, count)


def test_a_member_named_twice_reads_as_the_parse_does_the_last_one() -> None:
    big = json.dumps(list(range(200)))
    text = '{"a": ' + big + ', "b": 1, "a": {"x": [1, 2.50]}}'
    index = build_index(text, min_step=8)
    assert index is not None and index.nodes[""].members is None
    for where in ("/a", "/a/x/1", "/b", "/c"):
        assert (outcome(select_indexed, index, reader(text.encode(), []), where)
                == outcome(select_part, text, where))


def test_an_item_near_the_end_reads_one_step_not_the_document() -> None:
    value = {"total": 40000, "results": [{"id": i, "name": f"ïtem {i}"} for i in range(40000)]}
    text = json.dumps(value, ensure_ascii=False)
    stored = text.encode()
    index = index_of(stored)
    assert index is not None and "/results" in index.nodes
    reads: list[tuple[int, int]] = []
    part, what = select_indexed(index, reader(stored, reads), "/results/39998")
    assert json.loads(part) == value["results"][39998]  # type: ignore[index]
    assert what == "object at /results/39998"
    step = max(_jsonindex.MIN_STEP, len(text) // _jsonindex.TARGET_MARKS)
    assert sum(end - start for start, end in reads) <= 2 * step + 200


def test_documents_that_are_not_json_or_not_utf8_or_small_get_no_index() -> None:
    assert index_of(b"[" + b"1," * (1 << 20) + b"]") is None  # a trailing comma: not JSON
    assert index_of(b'["\xff' + b"x" * (1 << 20) + b'"]') is None
    assert index_of(b"[" + b"1," * 100 + b"1]") is None
    assert index_of(b"x" * (2 << 20)) is None
    assert index_of(b"[" + b"1," * (1 << 20) + b"1]") is not None
    assert build_index("[NaN, " + "1," * 100 + "1]", min_step=1) is None


def test_a_damaged_index_record_is_dropped_not_trusted() -> None:
    index = build_index(json.dumps({"a": list(range(300))}), min_step=8)
    assert isinstance(index, JsonIndex)
    record = index.record()
    size = len(json.dumps({"a": list(range(300))}))
    assert parse_index(record, size) == index
    assert parse_index(record, 10) is None  # offsets past the stored bytes
    for damage in ({"style": [None, ";", ":"]}, {"nodes": [["", 0, 5, 1, "x", []]]},
                   {"nodes": [["/a", 0, 5, 1, "a", [[0, 1]]]]},  # no root
                   {"style": ["x", ",", ":"]}, {"nodes": "no"}):
        assert parse_index({**record, **damage}, size) is None
    assert parse_index("nonsense", size) is None


FILLER = ", ".join(['1', '-0.5e+3', 'true', 'null', '"ab é"'] * 40)


def test_what_the_decoder_refuses_inside_a_run_of_items_gets_no_index() -> None:
    for bad in ("01", "1.", ".5", "+1", "-", "1e", "tru", "nul", "NaN", "-Infinity",
                '"a\x01"', '"a', "1 2", "1,,2", "1,]", "[1", "{}}", '"\\x"', "0x1"):
        text = "[" + FILLER + ", " + bad + ", " + FILLER + "]"
        try:
            json.loads(text, parse_constant=lambda name: int(name))
        except ValueError:
            pass
        else:
            raise AssertionError(f"{bad!r} is valid JSON")
        for step in (1, 16, 4096):
            assert build_index(text, min_step=step) is None, (bad, step)


def test_runs_of_plain_items_are_counted_and_marked_as_the_items_are() -> None:
    items = [1, -0.5e3, True, None, "ab é", "", 0, 12345678901234567890, "x, y", "q\\"]
    text = json.dumps(items * 300, ensure_ascii=False, indent=1)
    for step in (1, 7, 64, 1000):
        index = build_index(text, min_step=step)
        assert index is not None and index.nodes[""].count == 3000
        for where, start, count in (("/2999", None, None), ("", 1234, 17), ("/8", None, None)):
            assert (outcome(select_indexed, index, reader(text.encode(), []), where, start, count)
                    == outcome(select_part, text, where, start, count))


def test_big_containers_nested_deep_are_walked_into_only_within_the_decode_budget() -> None:
    value: object = list(range(20000))
    for _ in range(20):
        value = {"a": [value, 1]}  # each level holds nearly the whole document
    text = json.dumps(value)
    index = build_index(text, min_step=1024)
    assert index is not None
    depths = {where.count("/") for where in index.nodes}
    assert 0 < max(depths) < 40  # stopped walking in before the 41 levels
    deepest = "/a/0" * 20 + "/19999"
    assert (outcome(select_indexed, index, reader(text.encode(), []), deepest)
            == outcome(select_part, text, deepest) == ("19999", "number at " + deepest))


def test_a_held_stream_lets_its_bytes_go_once_it_cannot_be_a_document_worth_an_index() -> None:
    document = json.dumps(list(range(300_000))).encode()  # about 2 MB
    held = HeldDocument()
    for at in range(0, len(document), 4096):
        held.feed(document[at : at + 4096])
    assert held.index() == index_of(document) is not None
    assert held.index() is None  # given once
    for chunks, limit in (([b"  \n", b"x" + document], None),  # text, not a document
                          ([b"\n", document], 1024 * 1024),  # over the limit
                          ([document[:1000]], None)):  # too small, and cut short
        held = HeldDocument(limit)
        for chunk in chunks:
            held.feed(chunk)
        assert held.index() is None
    held = HeldDocument()
    held.feed(document)
    held.drop()
    assert held.index() is None


def test_the_record_stays_within_its_bound_whatever_the_keys() -> None:
    # Many big objects, each with many long keys that a record writes escaped.
    record = {f"鍵{i}-{'キー' * 20}": "v" * 40 for i in range(200)}
    text = json.dumps([{"n": n, "members": record} for n in range(8)], ensure_ascii=False)
    index = build_index(text)
    assert index is not None
    size = len(json.dumps(index.record(), separators=(",", ":")))
    assert size <= _jsonindex.MAX_INDEX_BYTES + 1024
    part = select_indexed(index, reader(text.encode(), []), "/7/members")
    assert part == select_part(text, "/7/members")


def test_a_forged_span_into_a_string_of_brackets_is_a_one_line_error() -> None:
    # A record's spans are checked for range and order only: a forged one can point
    # into a string that nests past Python's recursion limit when parsed.
    text = '{"a": "' + "[" * 200_000 + '"}'
    data = text.encode()
    real = build_index(text)
    assert real is not None
    forged = dataclasses.replace(real, nodes={"": Container(
        0, len(data), 1, False, members=(("a", 7, len(data) - 2),))})
    with pytest.raises(ValueError, match="cannot be read by pointer"):
        select_stored(forged, lambda low, high: data[low:high], len(data), "/a")
