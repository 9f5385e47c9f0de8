"""The SSE reader of an HTTP upstream's replies: whatever the chunking, each event's data
comes out whole, byte for byte, in order, with its id; and the answer-id finder used on
big events says which request an event answers, never a request's own id."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._long import WINDOW, response_ids
from toolcap.proxy._sse import MAX_RETRY_MS, MIN_RETRY_MS, EventTooLarge, SseEvent, SseReader

# A data line is any bytes but a line end; an id has no NUL (the spec ignores such an id).
data_line = st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))
event_id = st.none() | data_line.map(lambda b: b.replace(b"\0", b""))
event = st.tuples(st.lists(data_line, min_size=1, max_size=4), event_id, st.booleans())


def encode(events: list[tuple[list[bytes], bytes | None, bool]], crlf: bool) -> bytes:
    end = b"\r\n" if crlf else b"\n"
    out = b": keep-alive" + end
    for lines, ident, spaced in events:
        if ident is not None:
            out += b"id: " + ident + end
        out += b"event: message" + end + b"retry: 250" + end
        for line in lines:
            out += (b"data: " if spaced else b"data:") + line + end
        out += end
    return out


def read(stream: bytes, cuts: list[int]) -> tuple[list[SseEvent], SseReader]:
    reader = SseReader()
    got: list[SseEvent] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        got += reader.feed(stream[start:cut])
        start = cut
    return got, reader


@settings(deadline=None, max_examples=400)
@given(events=st.lists(event, max_size=6), crlf=st.booleans(),
       cuts=st.lists(st.integers(0, 2000), max_size=30))
def test_every_event_comes_out_whole_in_order_whatever_the_chunks(
    events: list[tuple[list[bytes], bytes | None, bool]], crlf: bool, cuts: list[int]
) -> None:
    stream = encode(events, crlf)
    got, reader = read(stream, [c for c in cuts if c <= len(stream)])
    expected = []
    for lines, ident, spaced in events:
        # "data: x" loses its one space; "data:" followed by a space loses that space.
        data = [line[1:] if not spaced and line.startswith(b" ") else line for line in lines]
        shown_id = None if ident is None else ident.decode("utf-8", "replace")
        expected.append((b"\n".join(data), shown_id))
    assert [(e.data, e.id) for e in got] == expected
    ids = [ident for _, ident in expected if ident is not None]
    assert reader.last_id == (ids[-1] if ids else None)
    assert reader.retry_ms == (250 if events else None)


line_end = st.sampled_from([b"\n", b"\r\n", b"\r"])


@settings(deadline=None, max_examples=400)
@given(events=st.lists(st.tuples(st.lists(data_line, min_size=1, max_size=4), event_id),
                       max_size=6),
       ends=st.lists(line_end, min_size=1, max_size=40),
       cuts=st.lists(st.integers(0, 2000), max_size=30))
def test_lines_ending_in_a_bare_cr_lf_or_crlf_read_alike_whatever_the_chunks(
    events: list[tuple[list[bytes], bytes | None]], ends: list[bytes], cuts: list[int]
) -> None:
    # Each line ends as the spec allows (CR, LF or CRLF, mixed), and a chunk may end
    # between a CR and its LF: that is one line end, never an empty line (a dispatch).
    turn = iter(ends * 100)
    out = b""

    def end() -> bytes:
        chosen = next(turn)
        # A CR then an LF is one CRLF: an LF meant as a line end of its own after a CR
        # is written as CRLF.
        return b"\r\n" if chosen == b"\n" and out.endswith(b"\r") else chosen

    out += b": keep-alive"
    out += end()
    for lines, ident in events:
        if ident is not None:
            out += b"id: " + ident
            out += end()
        for line in lines:
            out += b"data:" + (b" " + line if line.startswith(b" ") else line)
            out += end()
        out += end()
    got, _ = read(out, [c for c in cuts if c <= len(out)])
    expected = [(b"\n".join(lines), None if ident is None else ident.decode("utf-8", "replace"))
                for lines, ident in events]
    assert [(e.data, e.id) for e in got] == expected


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    got, _ = read(b'data: {"a":1}\r\ndata: {"b":2}\r\n\r\n', [14, 28])
    assert [e.data for e in got] == [b'{"a":1}\n{"b":2}']


def test_an_answer_in_bare_cr_lines_is_dispatched() -> None:
    got, _ = read(b'id: 1-1\revent: message\rdata: {"jsonrpc":"2.0","id":1,"result":{}}\r\r', [])
    assert [(e.data, e.id) for e in got] == [(b'{"jsonrpc":"2.0","id":1,"result":{}}', "1-1")]


def test_an_event_of_only_an_id_is_a_priming_event_with_no_data() -> None:
    got, reader = read(b"id: 7-0\ndata:\n\nid: 7-1\n\n", [])
    assert [(e.data, e.id) for e in got] == [(b"", "7-0"), (b"", "7-1")]
    assert reader.last_id == "7-1"


def test_an_event_cut_short_by_the_end_of_the_stream_is_not_dispatched() -> None:
    got, _ = read(b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n', [5])
    assert got == []


ids = st.integers(-(10**12), 10**12) | st.text(max_size=20)
filler = st.text(max_size=50).map(lambda text: text + "x" * WINDOW)  # past one window


@settings(deadline=None, max_examples=200)
@given(request_id=ids, text=filler, id_first=st.booleans(), error=st.booleans())
def test_a_big_answer_names_the_request_it_answers(
    request_id: int | str, text: str, id_first: bool, error: bool
) -> None:
    body = {"error": {"code": 1, "message": text}} if error else {"result": {"text": text}}
    message = ({"jsonrpc": "2.0", "id": request_id, **body} if id_first
               else {**body, "jsonrpc": "2.0", "id": request_id})
    data = json.dumps(message).encode()
    assert response_ids(data[:WINDOW], data[-WINDOW:]) == [request_id]


@settings(deadline=None, max_examples=200)
@given(request_id=ids, text=filler)
def test_a_big_request_from_the_server_answers_nothing(request_id: int | str, text: str) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage",
               "params": {"result": text, "error": text}}
    data = json.dumps(message).encode()
    assert response_ids(data[:WINDOW], data[-WINDOW:]) == []


def test_a_big_answer_whose_id_is_inside_is_an_answer_of_unknown_id() -> None:
    data = b'{"result":{"text":"' + b"x" * (3 * WINDOW) + b'"},"id":5,"extra":' + b"1" * 9 + b"}"
    assert response_ids(data[:WINDOW], data[-WINDOW:]) == [None]


def test_an_event_over_the_bound_is_refused_before_it_is_held() -> None:
    reader = SseReader(max_event=1000)
    assert reader.feed(b"data: " + b"x" * 500 + b"\n") == []
    with pytest.raises(EventTooLarge):
        reader.feed(b"data: " + b"y" * 600)  # the line is not even finished


def test_an_endless_line_is_refused_while_it_grows() -> None:
    reader = SseReader(max_event=4096)
    with pytest.raises(EventTooLarge):
        for _ in range(100):
            reader.feed(b"z" * 100)


@pytest.mark.parametrize(("asked", "kept"), [(b"0", MIN_RETRY_MS), (b"250", 250),
                                             (b"999999999", MAX_RETRY_MS),
                                             (b"9" * 5000, None)])
def test_a_servers_retry_is_kept_within_reason(asked: bytes, kept: int | None) -> None:
    reader = SseReader()
    reader.feed(b"retry: " + asked + b"\n\n")
    assert reader.retry_ms == kept
