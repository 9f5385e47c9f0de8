"""The bytes a session holds for its client (``_room.Room``): counted in its streams'
queues and on their way to the loop, and waited on while over the limit; what waits
for a stream to open, bounded; the stream a message no request asked for goes to."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.proxy._room import BEHIND, Backlog, Room, StreamQueue, unstalled


def test_a_queue_counts_the_bytes_of_the_events_it_holds() -> None:
    async def go() -> None:
        room = Room(limit=10)
        queue = StreamQueue(room)
        queue.put_nowait(("1-1", b"abcdef"))
        queue.put_nowait(None)
        queue.put_nowait(("1-2", b"ghijkl"))
        assert (queue.size, room.used(), room.full()) == (12, 12, True)
        assert await queue.get() == ("1-1", b"abcdef")
        assert queue.get_nowait() is None
        assert (queue.size, room.used(), room.full()) == (6, 6, False)

    asyncio.run(go())


@settings(deadline=None, max_examples=50)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=30),
       st.integers(min_value=0, max_value=30))
def test_what_a_queue_counts_is_what_it_holds(items: list[bytes | None], taken: int) -> None:
    async def go() -> None:
        room = Room()
        queue = StreamQueue(room)
        for data in items:
            queue.put_nowait(None if data is None else (None, data))
        for _ in range(min(taken, len(items))):
            queue.get_nowait()
        left = list(queue._queue)  # what is still in it
        assert queue.size == room.used() == sum(len(item[1]) for item in left if item)

    asyncio.run(go())


def test_a_queue_let_go_of_is_no_longer_counted() -> None:
    async def go() -> Room:
        room = Room(limit=4)
        queue = StreamQueue(room)
        queue.put_nowait((None, b"abcdefgh"))
        assert room.full()
        return room

    room = asyncio.run(go())
    gc.collect()  # the loop's own references to the queue went with it
    assert room.used() == 0 and not room.full()


def test_lines_on_their_way_to_the_loop_count_until_routed() -> None:
    room = Room(limit=5)
    room.moving(8)
    assert room.full()
    room.moving(-8)
    assert not room.full()


def test_a_closed_room_is_never_full_and_lets_waiters_go() -> None:
    room = Room(limit=0)
    room.moving(1)
    released = threading.Event()
    waiter = threading.Thread(target=lambda: (room.wait(lambda: False), released.set()))
    waiter.start()
    assert not released.wait(0.1)
    room.close()
    assert released.wait(10)
    waiter.join(10)
    assert not room.full()


def test_a_thread_waits_only_while_its_client_is_there() -> None:
    room = Room(limit=0)
    room.moving(1)
    gone = threading.Event()
    waiter = threading.Thread(target=room.wait, args=(gone.is_set,))
    waiter.start()
    gone.set()
    waiter.join(10)
    assert not waiter.is_alive() and room.full()


def test_an_action_waits_on_the_loop_for_room_then_runs() -> None:
    async def go() -> list[str]:
        room = Room(limit=3)
        queue = StreamQueue(room)
        queue.put_nowait((None, b"abcd"))
        done: list[str] = []

        async def later() -> None:
            done.append("ran")

        waiting = asyncio.ensure_future(room.then(later))
        await asyncio.sleep(0.1)
        assert done == [] and not waiting.done()
        queue.get_nowait()  # the client read it
        await asyncio.wait_for(waiting, 10)
        return done

    assert asyncio.run(go()) == ["ran"]


def test_a_stream_no_longer_read_is_no_longer_counted() -> None:
    from toolcap.proxy._channel import Channel

    async def go() -> tuple[int, int]:
        room = Room()
        channel = Channel(room=room)
        exchange = channel.open_post([1])
        assert exchange.queue is not None
        queue = exchange.queue
        channel.deliver(b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}')
        held = room.used()
        channel.close(exchange, queue)  # its connection ended
        return held, room.used()

    held, after = asyncio.run(go())
    assert held > 0 and after == 0


def test_what_waits_for_a_stream_to_open_is_bounded_in_bytes_and_keeps_the_newest() -> None:
    from toolcap.proxy._channel import Channel

    async def go() -> list[bytes]:
        channel = Channel(room=Room())
        pad = "y" * (1 << 20)
        for number in range(40):  # 40 MB while no stream is open
            channel.deliver(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                        "params": {"n": number, "data": pad}}).encode())
        standalone = channel.open_standalone()
        assert standalone is not None and standalone.queue is not None
        queue = standalone.queue
        return [queue.get_nowait()[1] for _ in range(queue.qsize())]  # type: ignore[index]

    kept = asyncio.run(go())
    assert sum(len(data) for data in kept) <= 16 << 20  # as docs/serving.md says
    numbers = [json.loads(data)["params"]["n"] for data in kept]
    assert numbers == list(range(40 - len(numbers), 40)) and len(numbers) >= 10


@settings(deadline=None, max_examples=200)
@given(st.lists(st.binary(max_size=30), max_size=40), st.integers(1, 10), st.integers(0, 100))
def test_a_backlog_keeps_the_newest_messages_that_fit_its_count_and_bytes(
    messages: list[bytes], most: int, most_bytes: int
) -> None:
    backlog = Backlog(most, most_bytes)
    for data in messages:
        backlog.keep(data)
    kept: list[bytes] = []
    backlog.drain(kept.append)
    assert kept == messages[len(messages) - len(kept):]  # the newest, oldest first
    assert len(kept) <= most and sum(map(len, kept)) <= most_bytes
    if len(kept) < len(messages):  # and as many as fit: the one before would not
        before = messages[len(messages) - len(kept) - 1]
        assert len(kept) + 1 > most or sum(map(len, kept)) + len(before) > most_bytes
    again: list[bytes] = []
    backlog.drain(again.append)
    assert again == []


class _Stream:
    def __init__(self, queue: StreamQueue, taken_at: float) -> None:
        self.queue = queue
        queue.taken_at = taken_at


def test_a_stream_whose_client_has_stalled_is_passed_over_for_the_one_read_last() -> None:
    async def go() -> None:
        room = Room(limit=4 * BEHIND)
        # Read "in an hour": a stream here stalls only by the room being crowded.
        later = time.monotonic() + 3600
        streams = [_Stream(StreamQueue(room), later + at) for at in (3, 1, 2)]
        assert unstalled(streams, room) is streams[-1]  # the newest
        behind = (None, b"x" * (BEHIND + 1))
        streams[-1].queue.put_nowait(behind)
        assert unstalled(streams, room) is streams[-1]  # behind, but the room has room
        room.limit = BEHIND  # over half of it taken: crowded
        assert unstalled(streams, room) is streams[0]  # the one read last
        streams[0].queue.put_nowait(behind)
        assert unstalled(streams, room) is streams[1]  # the only one not stalled
        streams[1].queue.put_nowait(behind)
        assert unstalled(streams, room) is streams[0]  # all stalled: the one read last

    asyncio.run(go())
