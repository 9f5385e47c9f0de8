"""Lines sent to an --url upstream reach its outbox in the order they were sent, from
the event loop's own thread or from another (the relay's listing, read_artifact's
workers): one sent on the loop never overtakes one another thread sent before it."""

from __future__ import annotations

import asyncio
import threading

from toolcap.proxy._http import HttpUpstream


def test_a_line_sent_on_the_loop_goes_after_one_another_thread_sent_before() -> None:
    upstream = HttpUpstream("http://127.0.0.1:9/mcp", {})
    loop = asyncio.new_event_loop()
    try:
        # The loop is this thread's, as if the upstream ran on it (not running yet:
        # what another thread sends waits for its next turn).
        upstream._loop, upstream._loop_thread = loop, threading.get_ident()
        other = threading.Thread(target=upstream.send, args=(b"held call",))
        other.start()
        other.join(30)
        upstream.send(b"its cancellation")
        loop.run_until_complete(asyncio.sleep(0))
        sent = [upstream._outbox.get_nowait() for _ in range(upstream._outbox.qsize())]
    finally:
        loop.close()
    assert sent == [b"held call", b"its cancellation"]
    upstream.send(b"then at once")  # nothing on its way: straight to the outbox
    assert upstream._outbox.get_nowait() == b"then at once"
