"""The relay's own listing before a call of a tool no listing has shown: what it sends,
what it holds back meanwhile and in what order it lets it go, and when it gives up."""

from __future__ import annotations

import json
import threading
from typing import Any, ClassVar

import pytest

from toolcap.proxy import _listfirst, _relist
from toolcap.proxy._contracts import dumps
from toolcap.proxy._listfirst import ListFirst

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 7}


class Upstream:
    """What the relay writes to its upstream, in order; ``run`` runs at once."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.learnt: list[list[str]] = []
        self.sent = threading.Event()

    def send(self, line: bytes) -> None:
        self.lines.append(line)
        self.sent.set()

    def messages(self) -> list[Any]:
        return [json.loads(line) for line in self.lines]

    def learn(self, result: dict[str, Any], first_page: bool) -> None:
        self.learnt.append([tool["name"] for tool in result["tools"]])


def listing(upstream: Upstream, *, now: bool = True) -> ListFirst:
    return ListFirst(upstream.send, upstream.learn, (lambda job: job()) if now else _thread)


def _thread(job: Any) -> None:
    threading.Thread(target=job, daemon=True).start()


def page(request_id: Any, names: list[str], cursor: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": [{"name": name, "inputSchema": {}} for name in names]}
    if cursor is not None:
        result["nextCursor"] = cursor
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def answer(lister: ListFirst, message: dict[str, Any]) -> None:
    lister.answered(message["id"], message, len(dumps(message)))


@pytest.fixture(autouse=True)
def no_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_relist, "LIST_FLOOR", 0.0)


def test_the_call_and_all_after_it_wait_for_every_page_then_go_in_order() -> None:
    upstream = Upstream()
    lister = listing(upstream)
    first = lister.before_call("typed", META)
    assert first is not None and lister.is_own(first)
    for line in (b'{"id":1,"method":"tools/call"}', b'{"method":"notifications/cancelled"}'):
        assert lister.hold(line)
    request = upstream.messages()[0]
    assert request["method"] == "tools/list" and request["id"] == first
    # Only the revision's _meta goes with the listing, not the call's progress token.
    assert request["params"] == {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                           "2026-07-28"}}
    answer(lister, page(first, ["a"], cursor="c2"))
    second = upstream.messages()[1]
    assert second["params"]["cursor"] == "c2" and second["id"] != first
    assert lister.hold(b'{"id":2,"method":"ping"}')  # still held: a page is to come
    # The client's answers to the server's own requests are never held.
    assert not lister.hold(b"answer", {"id": "s1", "result": {}})
    assert not lister.hold(b"answers", [{"id": "s1", "result": {}}, {"id": "s2", "error": {}}])
    assert lister.hold(b'[{"id":"s3","result":{}},{"method":"ping","id":4}]',
                       [{"id": "s3", "result": {}}, {"method": "ping", "id": 4}])
    answer(lister, page(second["id"], ["typed"]))
    assert upstream.learnt == [["a"], ["typed"]]
    assert upstream.lines[2:] == [b'{"id":1,"method":"tools/call"}',
                                  b'{"method":"notifications/cancelled"}',
                                  b'{"id":2,"method":"ping"}',
                                  b'[{"id":"s3","result":{}},{"method":"ping","id":4}]']
    assert not lister.hold(b'{"id":3,"method":"ping"}')  # messages pass again


def test_a_listing_in_flight_is_not_made_twice_and_a_tool_soon_again_makes_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upstream = Upstream()
    lister = listing(upstream)
    first = lister.before_call("a", META)
    assert lister.before_call("b", META) is None  # the one in flight will do
    answer(lister, page(first, ["x"]))
    # The server's tools were listed a moment ago: a name it did not list is made up.
    assert lister.before_call("c", META) is None
    lister.changed()  # ...until it says they changed
    monkeypatch.setattr(_relist, "LIST_FLOOR", 3600.0)
    assert lister.before_call("c", META) is None  # never two within the floor
    monkeypatch.setattr(_relist, "LIST_FLOOR", 0.0)
    assert lister.before_call("c", META) is not None
    assert [m["method"] for m in upstream.messages()] == ["tools/list", "tools/list"]


def test_a_client_listing_that_passed_its_last_page_makes_listings_wait() -> None:
    lister = listing(Upstream())
    lister.listed()
    assert lister.before_call("a", None) is None


def test_an_error_answer_is_one_line_the_call_goes_on_and_the_next_call_lists_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    upstream = Upstream()
    lister = listing(upstream)
    first = lister.before_call("typed", None)
    lister.hold(b"call")
    answer(lister, {"jsonrpc": "2.0", "id": first,
                    "error": {"code": -32601, "message": "Method not found"}})
    assert upstream.lines[-1] == b"call"
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["toolcap proxy: listing the tools before a call of 'typed' failed (the "
                    "server answered 'Method not found'); its result is cut without the "
                    "tool's output schema"]
    assert upstream.learnt == []
    assert lister.before_call("typed", None) is not None  # a failed listing is made again


class FakeTimer:
    """A timer the test fires itself."""

    made: ClassVar[list[FakeTimer]] = []

    def __init__(self, interval: float, function: Any, args: tuple[Any, ...]) -> None:
        self.interval, self.fire = interval, lambda: function(*args)
        self.daemon = False
        self.cancelled = False
        FakeTimer.made.append(self)

    def start(self) -> None: ...

    def cancel(self) -> None:
        self.cancelled = True


def test_a_server_that_never_answers_holds_the_call_only_for_a_while(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(_listfirst.threading, "Timer", FakeTimer)
    upstream = Upstream()
    lister = listing(upstream)
    first = lister.before_call("typed", None)
    assert lister.hold(b"call")
    (timer,) = FakeTimer.made[-1:]
    assert timer.interval == _listfirst.HOLD_SECONDS
    timer.fire()
    # The server is told the listing is given up on; then the call goes.
    cancel, call = upstream.lines[1:]
    assert json.loads(cancel) == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                  "params": {"requestId": first,
                                             "reason": "no answer within 10 s"}}
    assert call == b"call"
    assert "no answer within 10 s" in capsys.readouterr().err
    # Its answer, when it comes at last, is learnt from and drives nothing.
    answer(lister, page(first, ["typed"], cursor="more"))
    assert upstream.learnt == [["typed"]] and len(upstream.lines) == 3


def test_pages_that_never_end_are_followed_only_so_far() -> None:
    upstream = Upstream()
    lister = listing(upstream)
    lister.before_call("typed", None)
    lister.hold(b"call")
    for _ in range(_relist.MAX_PAGES):
        assert upstream.lines[-1] != b"call"
        request_id = json.loads(upstream.lines[-1])["id"]
        answer(lister, page(request_id, ["t"], cursor="again"))
    assert upstream.lines[-1] == b"call"
    assert len(upstream.lines) == _relist.MAX_PAGES + 1


def test_a_listing_over_its_byte_budget_ends_with_what_it_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_listfirst, "MAX_LISTING", 100)
    upstream = Upstream()
    lister = listing(upstream)
    request_id = lister.before_call("typed", None)
    lister.hold(b"call")
    answer(lister, page(request_id, ["t" * 200], cursor="more"))
    assert upstream.lines[-1] == b"call" and len(upstream.lines) == 2


def test_what_comes_while_held_lines_are_sent_is_sent_after_them() -> None:
    upstream = Upstream()
    lister: ListFirst

    def send(line: bytes) -> None:
        upstream.send(line)
        if line == b"first":  # a client message arrives while the flush writes
            assert lister.hold(b"later")

    lister = ListFirst(send, upstream.learn, lambda job: job())
    request_id = lister.before_call("typed", None)
    lister.hold(b"first")
    lister.hold(b"second")
    answer(lister, page(request_id, ["typed"]))
    assert upstream.lines[1:] == [b"first", b"second", b"later"]
    assert not lister.hold(b"after")


def test_a_closed_relay_holds_nothing_and_leaves_no_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_listfirst, "HOLD_SECONDS", 3600.0)
    before = set(threading.enumerate())
    lister = listing(Upstream())
    lister.before_call("typed", None)
    timers = [t for t in threading.enumerate() if t not in before and isinstance(
        t, threading.Timer)]
    assert len(timers) == 1
    lister.close()
    assert not lister.hold(b"call")
    assert lister.before_call("other", None) is None
    timers[0].join(30)
    assert not timers[0].is_alive()


def test_ids_of_its_own_are_told_from_any_a_client_chooses() -> None:
    lister = listing(Upstream())
    own = lister.before_call("typed", None)
    assert lister.is_own(own)
    for client_id in (1, "1", "toolcap-list-1", None, [own], {"id": own}):
        assert not lister.is_own(client_id)


def test_an_answer_that_could_not_be_read_ends_its_listing_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    upstream = Upstream()
    lister = listing(upstream)
    request_id = lister.before_call("typed", None)
    lister.hold(b"call")
    assert not lister.unread(1, "a client's")  # not ours: the relay answers it
    assert upstream.lines[-1] != b"call"
    assert lister.unread(request_id, "a message over max_line_size")
    assert upstream.lines[-1] == b"call"
    assert "failed (a message over max_line_size)" in capsys.readouterr().err


def test_a_listing_started_while_held_lines_are_sent_holds_what_comes_after() -> None:
    upstream = Upstream()
    lister: ListFirst

    def send(line: bytes) -> None:
        upstream.send(line)
        if line == b"first":  # meanwhile, a call of another unlisted tool comes
            assert lister.before_call("b", None) is not None
            assert lister.hold(b"call-b")

    lister = ListFirst(send, upstream.learn, lambda job: job())
    first = lister.before_call("a", None)
    lister.hold(b"first")
    lister.hold(b"next")
    answer(lister, {"jsonrpc": "2.0", "id": first, "error": {"code": 1, "message": "no"}})
    # What was taken before it went on; the call held for the new listing waits for it.
    second = json.loads(upstream.lines[2])
    assert second["method"] == "tools/list"
    assert upstream.lines[3:] == [b"next"]
    answer(lister, page(second["id"], ["b"]))
    assert upstream.lines[4:] == [b"call-b"]


def test_more_held_than_the_cap_ends_the_wait_and_the_client_reader_waits_for_room(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(_listfirst, "HOLD_MAX", 100)
    upstream = Upstream()
    release = threading.Event()

    def send(line: bytes) -> None:
        upstream.send(line)
        if line.startswith(b"a"):
            release.wait(30)  # a server slow to read

    lister = ListFirst(send, upstream.learn, _thread)
    first = lister.before_call("typed", None)
    lister.hold(b"a" * 101)  # over the cap: the listing is given up on, held lines go
    assert "the client sent over" in capsys.readouterr().err
    lister.hold(b"b" * 101)  # while the first is being sent: over the cap again
    waiting = threading.Thread(target=lister.wait_for_room, daemon=True)
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # the client's reader waits, as on a full pipe
    release.set()
    waiting.join(30)
    assert not waiting.is_alive()
    assert lister.drain(30)
    cancel = json.loads(upstream.lines[1])
    assert cancel["params"]["requestId"] == first
    assert upstream.lines[2:] == [b"a" * 101, b"b" * 101]


def test_draining_waits_until_what_is_held_has_gone() -> None:
    upstream = Upstream()
    lister = listing(upstream)
    first = lister.before_call("typed", None)
    lister.hold(b"call")
    assert not lister.drain(0.01)
    answer(lister, page(first, ["typed"]))
    assert lister.drain(0)
    assert upstream.lines[-1] == b"call"


def test_a_listing_carries_only_small_revision_meta_of_the_call() -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "x" * (32 << 10)},
            "other": 1}
    request = _relist.listing_request("id", meta, "c")
    assert request["params"] == {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                           "2026-07-28"}, "cursor": "c"}


def test_a_listing_cut_short_does_not_count_as_one_that_showed_every_tool() -> None:
    upstream = Upstream()
    lister = listing(upstream)
    lister.before_call("typed", None)
    for _ in range(_relist.MAX_PAGES):
        answer(lister, page(json.loads(upstream.lines[-1])["id"], ["t"], cursor="again"))
    assert lister.before_call("on-a-page-never-read", None) is not None


def test_a_flush_that_fails_lets_later_messages_pass() -> None:
    upstream = Upstream()

    def send(line: bytes) -> None:
        if line == b"call":
            raise RuntimeError("a bug")
        upstream.send(line)

    lister = ListFirst(send, upstream.learn, lambda job: job())
    first = lister.before_call("typed", None)
    lister.hold(b"call")
    with pytest.raises(RuntimeError):
        answer(lister, page(first, ["typed"]))
    assert not lister.hold(b"next")
    assert lister.drain(0)
