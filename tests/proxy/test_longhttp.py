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
