"""Messages of an upstream on the server's loop reach the relay one at a time, in order."""

from __future__ import annotations

import threading

from toolcap.proxy._handoff import Handoff


class _Relay:
    """Records each message it is handed, with the thread it was handed on; the
    message ``b"slow"`` waits until ``release`` is set."""

    def __init__(self) -> None:
        self.seen: list[tuple[bytes, int]] = []
        self.release = threading.Event()
        self.busy = 0
        self.overlapped = False
        self.done = threading.Event()

    def on_line(self, holder: list[bytes | bytearray]) -> None:
        line = bytes(holder.pop())
        self.busy += 1
        self.overlapped = self.overlapped or self.busy > 1
        if line == b"slow":
            assert self.release.wait(30)
        self.seen.append((line, threading.get_ident()))
        self.busy -= 1
        if line == b"last":
            self.done.set()


def test_a_small_message_the_relay_passes_as_it_is_is_handled_on_the_callers_thread() -> None:
    relay = _Relay()
    handoff = Handoff(lambda size: True)
    handoff.on_line = relay.on_line
    assert handoff.hand_on([b"small"]) is None
    assert relay.seen == [(b"small", threading.get_ident())]


def test_a_message_to_bound_goes_to_a_thread_and_later_ones_wait_behind_it() -> None:
    relay = _Relay()
    handoff = Handoff(lambda size: size < 4)  # "slow" (4 bytes) is one to bound
    handoff.on_line = relay.on_line
    slow = handoff.hand_on([b"slow"])
    behind = handoff.hand_on([b"a"])  # small, but behind a message still being handled
    assert slow is not None and behind is not None
    handoff.hand_on([b"b"])
    assert relay.seen == [] and not behind.done()
    relay.release.set()
    behind.result(30)
    handoff.hand_on([b"last"])
    assert relay.done.wait(30)
    assert [line for line, _ in relay.seen] == [b"slow", b"a", b"b", b"last"]
    assert all(thread != threading.get_ident() for _, thread in relay.seen[:1])
    assert not relay.overlapped


def test_a_message_over_the_inline_maximum_never_runs_on_the_loop() -> None:
    relay = _Relay()
    handoff = Handoff(lambda size: True)
    handoff.on_line = relay.on_line
    big = b"x" * (Handoff.INLINE_MAX + 1)
    away = handoff.hand_on([big])
    assert away is not None
    away.result(30)
    handoff.hand_on([b"last"])
    assert relay.seen[0][0] == big and relay.seen[0][1] != threading.get_ident()
    assert relay.seen[1] == (b"last", threading.get_ident())  # nothing away: on the loop again


def test_a_message_whose_reader_gave_up_waiting_does_not_hold_up_the_ones_behind_it() -> None:
    relay = _Relay()
    handoff = Handoff(lambda size: size < 4)
    handoff.on_line = relay.on_line
    slow = handoff.hand_on([b"slow"])
    assert slow is not None
    # What cancelling the awaiting task does to the future (a cancelled 2026-07-28 call).
    assert slow.cancel()
    relay.release.set()
    handoff.hand_on([b"last"])
    assert relay.done.wait(30)
    assert [line for line, _ in relay.seen] == [b"slow", b"last"]
