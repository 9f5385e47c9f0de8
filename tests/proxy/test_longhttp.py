"""The queue between an HTTP answer over max_line_size (fed on the event loop) and the
thread that keeps it: bounded whatever the speeds, every byte in order, and an answer
cut short kept nowhere."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from toolcap.proxy._long import LongMessage, MessageCutShort, keep_long_line
from toolcap.proxy._longhttp import DEPTH, StreamedMessage


class SlowWriter:
    """A store writer that takes each chunk only when the test lets it."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.go = threading.Event()
        self.aborted = self.committed = False

    def write(self, chunk: bytes) -> None:
        self.go.wait(30)
        self.data += chunk

    def commit(self) -> str:
        self.committed = True
        return "toolcap:" + "0" * 32

    def abort(self) -> None:
        self.aborted = True


def run(chunks: list[bytes], cut_short: str | None) -> tuple[StreamedMessage, SlowWriter, Any]:
    writer = SlowWriter()
    kept: list[Any] = []

    def keep(message: LongMessage) -> None:
        kept.append(keep_long_line(message, lambda: writer))

    async def feed() -> StreamedMessage:
        message = StreamedMessage(limit=10, idle=30)
        message.start(keep)
        for number, chunk in enumerate(chunks):
            await message.put(chunk)
            if number == DEPTH:
                writer.go.set()  # stuck on the first chunk until now: the queue filled
        message.finish(cut_short)
        await message.kept()
        return message

    message = asyncio.run(feed())
    return message, writer, kept[0]


def test_a_slow_store_holds_the_reader_back_to_a_few_chunks_and_gets_every_byte() -> None:
    chunks = [bytes([65 + n % 26]) * 1000 for n in range(200)]
    message, writer, kept = run(chunks, None)
    assert message.most_queued == DEPTH
    assert bytes(writer.data) == b"".join(chunks) and writer.committed
    assert kept.whole and kept.ref is not None and kept.size == 200_000


def test_an_answer_cut_short_is_aborted_in_the_store_and_names_no_artifact() -> None:
    _, writer, kept = run([b"x" * 1000] * 20, "the connection ended")
    assert writer.aborted and not writer.committed
    assert not kept.whole and kept.ref is None and kept.reason == "the connection ended"


def test_a_message_cut_short_raises_on_the_keeping_side() -> None:
    async def feed() -> list[Any]:
        message = StreamedMessage(limit=10, idle=30)
        seen: list[Any] = []

        def keep(long: LongMessage) -> None:
            try:
                seen.extend(long.chunks())
            except MessageCutShort as exc:
                seen.append(str(exc))

        message.start(keep)
        await message.put(b"abc")
        message.finish("gone")
        await message.kept()
        return seen

    assert asyncio.run(feed()) == [b"abc", "gone"]


def test_a_cancelled_wait_for_the_keeper_leaves_no_error_in_its_thread() -> None:
    # The exchange waiting for kept() is cancelled (the client cancels, the session
    # stops) while the thread still commits: the thread must end quietly.
    errors: list[BaseException | None] = []
    hook, threading.excepthook = threading.excepthook, lambda args: errors.append(args.exc_value)
    committing, release = threading.Event(), threading.Event()
    keeper: list[threading.Thread] = []

    def keep(message: LongMessage) -> None:
        keeper.append(threading.current_thread())
        for _ in message.chunks():
            pass
        committing.set()
        release.wait(30)  # a slow store, committing

    async def main() -> None:
        message = StreamedMessage(limit=10, idle=30)
        message.start(keep)
        await message.put(b"x" * 100)
        message.finish()
        waiting = asyncio.ensure_future(message.kept())
        await asyncio.to_thread(committing.wait, 30)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)

    try:
        asyncio.run(main())
        release.set()
        keeper[0].join(30)
    finally:
        threading.excepthook = hook
    assert not keeper[0].is_alive() and errors == []


def test_a_message_the_keeper_gave_up_on_answers_no_call() -> None:
    # The thread stops waiting for bytes (its idle deadline) before the loop ends the
    # message: nothing is kept, so no call may be struck as answered.
    gave_up = threading.Event()
    kept: list[Any] = []

    def keep(message: LongMessage) -> None:
        writer = SlowWriter()
        writer.go.set()  # a store that keeps up
        kept.append(keep_long_line(message, lambda: writer))
        gave_up.set()

    async def main() -> list[Any]:
        message = StreamedMessage(limit=10, idle=0.01)
        message.start(keep)
        await message.put(b'{"jsonrpc": "2.0", "id": 7, "result": {"text": "')
        await asyncio.to_thread(gave_up.wait, 30)
        await message.put(b'x"}}')
        message.finish()
        return await message.kept()

    assert asyncio.run(main()) == [] and kept[0].whole is False


def test_a_long_request_from_the_server_answers_no_call() -> None:
    # Ids of the server's requests and of the client's are counted apart: a long
    # sampling request with id 1 is not the answer to the client's call 1.
    async def main(first: bytes) -> list[Any]:
        message = StreamedMessage(limit=10, idle=30)
        message.start(lambda message: [None for _ in message.chunks()])
        await message.put(first)
        await message.put(b'"x"}}')
        message.finish()
        return await message.kept()

    request = b'{"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"a": '
    answer = b'{"jsonrpc": "2.0", "id": 1, "result": {"a": '
    assert asyncio.run(main(request)) == []
    assert asyncio.run(main(answer)) == [1]
