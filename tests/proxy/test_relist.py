"""A 2026-07-28 call of a tool the proxy saw no listing of carries its Mcp-Param-*
headers from the listing the relay makes itself first; one the server still refuses for
them (HeaderMismatch: its marks changed since, or that listing failed) makes the proxy
list the tools again and send the call once more, and only once, and a listing that
fails or never ends leaves the refusal as the answer."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from .proxy_helpers import (
    RawProxy,
    StubHandler,
    base_env,
    loopback_http,
    proxy_argv,
    write_config,
)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": "not-for-the-listing"}
MARKED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}


class _Upstream(StubHandler):
    """Refuses a call whose Mcp-Param-Region does not mirror its region (or every call,
    ``always_refuse``); lists the tool, as JSON or as events, one page or pages without
    end, without its mark in the first ``unmarked`` listings (its marks changed since);
    or refuses, or never answers, the listing."""

    listing: ClassVar[str] = "json"  # "json", "events", "endless", "refused", "silent"
    always_refuse: ClassVar[bool] = False
    unmarked: ClassVar[int] = 0
    seen: ClassVar[Counter[str]] = Counter()
    list_metas: ClassVar[list[Any]] = []
    call_headers: ClassVar[list[str | None]] = []
    release: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        message = self.message()
        method = message.get("method")
        type(self).seen[method] += 1
        if method == "tools/list":
            self._list(message)
        elif method == "tools/call":
            header = self.headers.get("mcp-param-region")
            type(self).call_headers.append(header)
            region = message["params"]["arguments"].get("region")
            if header != region or self.always_refuse:
                error = {"code": -32020, "message": "Mcp-Param-Region header is missing"}
                self.answer(400, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                             "error": error}).encode(), "application/json")
                return
            result = {"content": [{"type": "text", "text": f"region {region}"}],
                      "resultType": "complete"}
            self.answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                         "result": result}).encode(), "application/json")
        else:
            self.answer(202)

    def _list(self, message: dict[str, Any]) -> None:
        type(self).list_metas.append(message["params"].get("_meta"))
        if self.listing == "refused":
            self.answer(500, b"no listing today", "text/plain")
            return
        if self.listing == "silent":
            type(self).release.wait(60)
            return
        marked = len(self.list_metas) > self.unmarked
        result: dict[str, Any] = {"tools": [{"name": "where", "inputSchema": MARKED if marked
                                             else {"type": "object"}}],
                                  "resultType": "complete"}
        if self.listing == "endless":
            result["nextCursor"] = "again"
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        if self.listing == "json":
            self.answer(200, answer.encode(), "application/json")
        else:
            self.answer(200, f"event: message\ndata: {answer}\n\n".encode(), "text/event-stream")


@pytest.fixture
def upstream() -> Iterator[type[_Upstream]]:
    class Upstream(_Upstream):
        seen: ClassVar[Counter[str]] = Counter()
        list_metas: ClassVar[list[Any]] = []
        call_headers: ClassVar[list[str | None]] = []
        release: ClassVar[threading.Event] = threading.Event()

    yield Upstream
    Upstream.release.set()


def calls_through_proxy(handler: type[_Upstream], tmp_path: Path, *args: str,
                        calls: int = 1) -> tuple[list[dict[str, Any]], str]:
    """2026-07-28 calls of `where` through `toolcap proxy --url` the stub, all sent at
    once; their answers (in order) and what the proxy said on stderr."""
    config = write_config(tmp_path / "toolcap.toml", "")
    with loopback_http(handler) as port:
        raw = RawProxy(proxy_argv("--url", f"http://127.0.0.1:{port}/mcp", *args),
                       base_env(tmp_path / "artifacts", config))
        try:
            for number in range(1, calls + 1):
                raw.send({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                          "params": {"name": "where", "arguments": {"region": "eu"},
                                     "_meta": META}})
            answers = [raw.response() for _ in range(calls)]
        finally:
            raw.close_stdin()
            assert raw.proc.wait(timeout=30) == 0
        assert raw.proc.stderr is not None
        return sorted(answers, key=lambda answer: answer["id"]), raw.proc.stderr.read().decode()


def call_through_proxy(handler: type[_Upstream], tmp_path: Path, *args: str) -> dict[str, Any]:
    """One 2026-07-28 call of `where` through `toolcap proxy --url` the stub; its answer."""
    (answer,), _ = calls_through_proxy(handler, tmp_path, *args)
    return answer


@pytest.mark.parametrize("listing", ["json", "events"])
def test_a_call_before_any_listing_carries_its_headers_from_the_proxys_own_listing(
    upstream: type[_Upstream], tmp_path: Path, listing: str
) -> None:
    upstream.listing = listing
    answer = call_through_proxy(upstream, tmp_path)
    assert answer["result"]["content"][0]["text"] == "region eu"
    assert upstream.seen == Counter({"tools/call": 1, "tools/list": 1})
    assert upstream.call_headers == ["eu"]
    # The listing names the call's revision and client, not the call's progress token.
    assert upstream.list_metas == [{k: v for k, v in META.items() if k != "progressToken"}]


@pytest.mark.parametrize("listing", ["json", "events"])
def test_a_call_refused_for_its_headers_is_sent_again_with_them_after_a_listing(
    upstream: type[_Upstream], tmp_path: Path, listing: str
) -> None:
    upstream.listing, upstream.unmarked = listing, 1
    answer = call_through_proxy(upstream, tmp_path)
    assert answer["result"]["content"][0]["text"] == "region eu"
    assert upstream.seen == Counter({"tools/call": 2, "tools/list": 2})
    assert upstream.call_headers == [None, "eu"]
    assert upstream.list_metas == 2 * [{k: v for k, v in META.items() if k != "progressToken"}]


def test_a_call_refused_again_after_the_listing_is_not_sent_a_third_time(
    upstream: type[_Upstream], tmp_path: Path
) -> None:
    upstream.always_refuse, upstream.unmarked = True, 1
    answer = call_through_proxy(upstream, tmp_path)
    assert answer["error"]["code"] == -32020
    assert upstream.seen == Counter({"tools/call": 2, "tools/list": 2})


def test_a_listing_whose_pages_never_end_is_read_twenty_pages_deep(
    upstream: type[_Upstream], tmp_path: Path
) -> None:
    upstream.listing, upstream.unmarked = "endless", 20  # the relay's listing: no marks
    answer = call_through_proxy(upstream, tmp_path)
    assert answer["result"]["content"][0]["text"] == "region eu"
    assert upstream.seen == Counter({"tools/call": 2, "tools/list": 40})


@pytest.mark.parametrize("listing, args", [("refused", ()), ("silent", ("--timeout", "1"))])
def test_a_listing_that_fails_leaves_the_refusal_as_the_answer(
    upstream: type[_Upstream], tmp_path: Path, listing: str, args: tuple[str, ...]
) -> None:
    upstream.listing = listing
    (answer,), stderr = calls_through_proxy(upstream, tmp_path, *args)
    assert answer["error"]["code"] == -32020
    # The relay's own listing failed before the call, then the one made for the refusal.
    assert upstream.seen == Counter({"tools/call": 1, "tools/list": 2})
    (before,) = [line for line in stderr.splitlines() if "before a call of" in line]
    assert before.startswith("toolcap proxy: listing the tools before a call of 'where' failed")
    (line,) = [line for line in stderr.splitlines() if "listing its tools" in line]
    assert line.startswith("toolcap proxy: http://127.0.0.1:")
    assert "refused a call of 'where' for its Mcp-Param-* headers" in line


def test_calls_refused_at_once_wait_for_one_listing_and_later_ones_make_none(
    upstream: type[_Upstream], tmp_path: Path
) -> None:
    upstream.always_refuse = True
    answers, _ = calls_through_proxy(upstream, tmp_path, calls=8)
    assert all(answer["error"]["code"] == -32020 for answer in answers)
    # One listing before the calls (the relay's), one for the refusals; each refused
    # call is sent again at most once.
    assert upstream.seen["tools/list"] == 2
    assert upstream.seen["tools/call"] <= 16


ROWS_SCHEMA = {"type": "object", "required": ["rows"],
               "properties": {"rows": {"type": "array", "items": {"type": "object"}}}}


class _TypedUpstream(StubHandler):
    """A tool `rows` whose result (300 KB of rows, structured) keeps to ROWS_SCHEMA, and
    its listing."""

    seen: ClassVar[Counter[str]] = Counter()
    order: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        message = self.message()
        method = message.get("method")
        type(self).seen[method] += 1
        type(self).order.append(method)
        if method == "tools/list":
            result: dict[str, Any] = {"tools": [
                {"name": "rows", "inputSchema": {"type": "object"}, "outputSchema": ROWS_SCHEMA}]}
        elif method == "tools/call":
            rows = [{"id": i, "name": f"row {i:05d} " + "x" * 100} for i in range(3000)]
            result = {"content": [{"type": "text", "text": json.dumps({"rows": rows})}],
                      "structuredContent": {"rows": rows}}
        else:
            self.answer(202)
            return
        self.answer(200, json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                     "result": result}).encode(), "application/json")


@pytest.mark.parametrize("client_lists", [False, True])
def test_a_listening_proxy_lists_the_tools_before_a_stateless_call_of_a_tool_it_never_saw(
    tmp_path: Path, client_lists: bool
) -> None:
    from .serve_helpers import Listener, raw

    class Upstream(_TypedUpstream):
        seen: ClassVar[Counter[str]] = Counter()
        order: ClassVar[list[str]] = []

    config = write_config(tmp_path / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    headers = {"Mcp-Protocol-Version": "2026-07-28"}

    def post(method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                           "params": {**params, "_meta": META}}).encode()
        reply = raw(listener.url, "POST", body, {**headers, "Mcp-Method": method})
        (data,) = [line[5:] for line in reply.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data))

    with loopback_http(Upstream) as port:
        args = ["--listen", "127.0.0.1:0", "--url", f"http://127.0.0.1:{port}/mcp"]
        with Listener(args, base_env(tmp_path / "artifacts", config),
                      tmp_path / "err.log") as listener:
            if client_lists:
                post("tools/list", {})
            answers = [post("tools/call", {"name": "rows", "arguments": {}}) for _ in range(2)]
    # Listed once, before the first call (or by the client): never once a call.
    assert Upstream.order == ["tools/list", "tools/call", "tools/call"]
    for answer in answers:
        jsonschema = pytest.importorskip("jsonschema")
        jsonschema.validate(answer["result"]["structuredContent"], ROWS_SCHEMA)


def test_a_call_refused_after_a_listing_made_for_its_tool_makes_no_other_one(
    upstream: type[_Upstream], tmp_path: Path
) -> None:
    upstream.always_refuse = True
    config = write_config(tmp_path / "toolcap.toml", "")
    with loopback_http(upstream) as port:
        raw = RawProxy(proxy_argv("--url", f"http://127.0.0.1:{port}/mcp"),
                       base_env(tmp_path / "artifacts", config))
        try:
            for _ in range(3):  # one after another, each answered before the next
                answer = raw.request("tools/call", {"name": "where",
                                                    "arguments": {"region": "eu"},
                                                    "_meta": META})
                assert answer["error"]["code"] == -32020
        finally:
            raw.close_stdin()
            assert raw.proc.wait(timeout=30) == 0
    assert upstream.seen["tools/list"] == 2  # the relay's own, then one for the refusals
