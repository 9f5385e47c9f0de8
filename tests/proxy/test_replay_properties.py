"""The replay buffer of a session: bounded in events and bytes, and a resumption gets
exactly what followed on its stream, or is refused; never a gap. Ids keyed apart."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._channel import Exchange, Replay, id_key

MAX_EVENTS, MAX_BYTES = 6, 200


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 260)), max_size=60))
def test_a_resumption_gets_what_followed_or_is_refused(sends: list[tuple[int, int]]) -> None:
    replay = Replay(MAX_EVENTS, MAX_BYTES)
    streams = [Exchange(number, replay) for number in (1, 2, 3)]
    sent: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for which, size in sends:
        data = bytes([65 + len(sent[which]) % 26]) * size
        streams[which].put(data)
        sent[which].append(data)
        assert len(replay) <= MAX_EVENTS
        assert replay.size <= MAX_BYTES
    for which, exchange in enumerate(streams):
        history = sent[which]
        for last in range(len(history) + 1):
            found = replay.after(exchange, last)
            if found is not None:
                assert [data for _, data in found] == history[last:]
                assert [event_id for event_id, _ in found] == [
                    f"{exchange.number}-{n}" for n in range(last + 1, len(history) + 1)]
        assert replay.after(exchange, len(history)) == []  # nothing followed the last event
        assert replay.after(exchange, len(history) + 1) is None  # an event never sent
        newest = [(w, s) for w, s in sends if w == which]
        if newest and newest[-1][1] <= MAX_BYTES and sends[-1][0] == which:
            assert replay.after(exchange, len(history) - 1) == [
                (f"{exchange.number}-{len(history)}", history[-1])]


def test_an_event_larger_than_the_buffer_is_sent_but_never_replayed() -> None:
    replay = Replay(MAX_EVENTS, MAX_BYTES)
    exchange = Exchange(1, replay)
    exchange.put(b"small")
    exchange.put(b"x" * (MAX_BYTES + 1))
    exchange.put(b"after")
    queue = exchange.queue
    assert queue is not None and queue.qsize() == 3  # every event went to the reader
    assert replay.after(exchange, 0) is None and replay.after(exchange, 1) is None
    assert replay.after(exchange, 2) == [("1-3", b"after")]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.none(),
                 st.floats(allow_nan=False)))
def test_an_id_is_keyed_as_its_json_and_1_and_quoted_1_stay_apart(request_id: object) -> None:
    assert id_key(request_id) == json.dumps(request_id, sort_keys=True)
    assert id_key(1) != id_key("1") and id_key(True) != id_key(1)
