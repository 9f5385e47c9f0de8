"""An SSE event over max_event, read in pieces (``stream_long``): whatever the bytes and
their chunking, the pieces of each long event joined are exactly the data the event has
(nothing lost, nothing made up), the other events come out as before, and what the
reader holds between chunks stays within the bound however long the event or line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._sse import FIELD_MAX, EventPart, SseEvent, SseReader

# The pieces a hostile stream is made of: every field the spec names, line ends of
# each kind, long runs of data, a colon-less line, a comment, bytes that are not UTF-8.
token = st.sampled_from([
    b"data:", b"data: ", b"data", b"id: 7", b"id:", b"id", b"event: m", b"retry: 300",
    b": ping", b":", b"dat", b"a:", b" ", b"x", b"\xff\xfe", b"\0", b"no colon here",
    b"\n", b"\r", b"\r\n", b"\n\n", b"\r\n\r\n",
]) | st.integers(1, 700).map(lambda n: b"z" * n) | st.binary(max_size=30) | st.tuples(
    st.sampled_from([b"data:", b"data: ", b"data:  "]), st.integers(0, 400),
    st.sampled_from([b"\n", b"\r", b"\r\n", b""])).map(lambda t: t[0] + b"y" * t[1] + t[2])
# Events of such pieces, most of them ended by a blank line.
stream_of_events = st.lists(st.tuples(st.lists(token, max_size=12), st.sampled_from(
    [b"\n\n", b"\r\n\r\n", b"\r\r", b""])).map(lambda t: b"".join(t[0]) + t[1]), max_size=8)


def read(stream: bytes, cuts: list[int], max_event: int | None) -> tuple[
        list[tuple[bytes, bool]], SseReader, int]:
    """Each event's data with whether it came in pieces, the reader, and the most it
    held between chunks."""
    reader = SseReader(max_event, stream_long=True)
    got: list[tuple[bytes, bool]] = []
    pieces: list[bytes] | None = None
    most = 0
    start = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        for item in reader.feed(stream[start:cut]):
            if isinstance(item, EventPart):
                pieces = [] if pieces is None else pieces
                pieces.append(item.data)
                if item.last:
                    got.append((b"".join(pieces), True))
                    pieces = None
            else:
                assert pieces is None, "an event began inside a long one"
                assert isinstance(item, SseEvent)
                got.append((item.data, False))
        most = max(most, reader.buffered)
        start = cut
    return got, reader, most


@settings(deadline=None, max_examples=600)
@given(events=stream_of_events, max_event=st.integers(0, 300),
       cuts=st.lists(st.integers(0, 6000), max_size=40))
def test_a_long_events_pieces_are_its_data_and_the_reader_holds_within_the_bound(
    events: list[bytes], max_event: int, cuts: list[int]
) -> None:
    stream = b"".join(events)
    whole, plain, _ = read(stream, [], None)
    got, reader, most = read(stream, [c for c in cuts if c <= len(stream)], max_event)
    # An event with data comes out with the same data, whole or in pieces, in order.
    assert [data for data, _ in got if data] == [data for data, _ in whole if data]
    assert reader.last_id == plain.last_id and reader.retry_ms == plain.retry_ms
    # Between chunks it holds at most the bound (a line being read, the event so far).
    assert most <= max(max_event, FIELD_MAX)


def test_an_endless_line_in_an_event_is_passed_on_never_held() -> None:
    reader = SseReader(64 * 1024, stream_long=True)
    passed = 0
    for _ in range(160):  # 10 MB with no line end
        for item in reader.feed(b"z" * (64 * 1024)):
            assert isinstance(item, EventPart) and not item.last
            passed += len(item.data)
        assert reader.buffered <= 64 * 1024
    assert passed == 0  # a line with no colon names no field: no data, only skipped
    endless_data = SseReader(64 * 1024, stream_long=True)
    parts = endless_data.feed(b"data: ") + [
        item for _ in range(160) for item in endless_data.feed(b"y" * (64 * 1024))]
    assert sum(len(p.data) for p in parts if isinstance(p, EventPart)) == 160 * 64 * 1024
    assert endless_data.buffered <= 64 * 1024


def test_a_long_event_split_over_many_chunks_then_a_short_one() -> None:
    body = b'{"jsonrpc": "2.0", "id": 3, "result": {"text": "' + b"q" * 5000 + b'"}}'
    stream = b"id: e1\r\ndata: " + body + b"\r\n\r\nid: e2\ndata: small\n\n"
    reader = SseReader(1000, stream_long=True)
    items = [item for at in range(0, len(stream), 7) for item in reader.feed(stream[at:at + 7])]
    parts = [item for item in items if isinstance(item, EventPart)]
    assert b"".join(p.data for p in parts) == body and parts[-1].last
    assert [item for item in items if isinstance(item, SseEvent)] == [SseEvent(b"small", "e2")]
    assert reader.last_id == "e2"
