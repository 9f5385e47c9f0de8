"""A real proxy over stdio lists a stdio server's tools itself before a call of a tool
no listing has shown: the call waits for every page, the cut then keeps to the tool's
output schema, the listing's answers reach no client, a server that asks the client
something before it lists is answered meanwhile, and one that cannot list costs one
line on stderr."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from proxy.proxy_helpers import SERVERS, RawProxy, base_env, proxy_argv, write_config

jsonschema = pytest.importorskip("jsonschema")

STUB = SERVERS / "listing_stub.py"
THRESHOLD = 16 * 1024


def start(tmp_path: Path, mode: str, config_text: str = "") -> tuple[RawProxy, Path]:
    config = write_config(tmp_path / "toolcap.toml",
                          f'{config_text}[tools."*"]\nsize_threshold = "{THRESHOLD}"\n')
    record = tmp_path / "record.jsonl"
    argv = proxy_argv("--", sys.executable, str(STUB), str(record), mode)
    proxy = RawProxy(argv, base_env(tmp_path / "store", config))
    assert "result" in proxy.initialize()
    return proxy, record


def call_rows(proxy: RawProxy) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Call the typed tool; its response, and every other message the client was sent
    meanwhile (a sampling request is answered)."""
    proxy.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "rows", "arguments": {}}})
    others: list[dict[str, Any]] = []
    while True:
        line = proxy._lines.get(timeout=60)
        assert line is not None, "the proxy closed its stdout"
        message = json.loads(line)
        if message.get("id") == 2 and "method" not in message:
            return message, others
        others.append(message)
        if message.get("method") == "sampling/createMessage":
            proxy.send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}})


def rows_once(tmp_path: Path, mode: str, config_text: str = "",
              ) -> tuple[dict[str, Any], list[dict[str, Any]], Path, RawProxy]:
    """A proxy in front of the stub in ``mode``, called once (``call_rows``) and left:
    the call's response, what else the client was sent, the record, the proxy."""
    proxy, record = start(tmp_path, mode, config_text)
    try:
        response, others = call_rows(proxy)
    finally:
        proxy.close_stdin()
    return response, others, record, proxy


def sent_to_server(record: Path) -> list[tuple[str | None, bool]]:
    """The methods the server was sent, in order, each with whether its id is the proxy's."""
    lines = record.read_text(encoding="utf-8").splitlines()
    return [(m["method"], str(m["id"]).startswith("toolcap-list-"))
            for m in map(json.loads, lines)]


def test_a_call_before_any_listing_waits_for_every_page_and_is_cut_to_its_schema(
    tmp_path: Path,
) -> None:
    response, others, record, _ = rows_once(tmp_path, "pages")
    assert others == []  # the listing's two answers reached no client
    assert sent_to_server(record) == [
        ("initialize", False), ("notifications/initialized", False),
        ("tools/list", True), ("tools/list", True), ("tools/call", False)]
    structured = response["result"]["structuredContent"]
    jsonschema.Draft202012Validator(rows_schema()).validate(structured)
    assert all(isinstance(row, dict) for row in structured["rows"])
    assert len(json.dumps(structured, separators=(",", ":"))) <= THRESHOLD
    # The client's own listing afterwards is answered as ever, read_artifact added.
    listed = proxy_listing(tmp_path)
    assert {"rows", "other", "read_artifact"} <= listed


def rows_schema() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("listing_stub", STUB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ROWS


def proxy_listing(tmp_path: Path) -> set[str]:
    proxy, _ = start(tmp_path, "pages")
    try:
        first = proxy.request("tools/list")["result"]
        second = proxy.request("tools/list", {"cursor": first["nextCursor"]})["result"]
    finally:
        proxy.close_stdin()
    return {tool["name"] for tool in first["tools"] + second["tools"]}


def test_a_server_that_asks_the_client_before_it_lists_is_answered_while_the_call_waits(
    tmp_path: Path,
) -> None:
    response, others, record, proxy = rows_once(tmp_path, "asks")
    assert [m.get("method") for m in others] == ["sampling/createMessage"]
    assert all(isinstance(row, dict) for row in response["result"]["structuredContent"]["rows"])
    methods = [method for method, _ in sent_to_server(record)]
    assert methods.index(None) < methods.index("tools/call")
    # The answer was not held: the listing ended answered, not given up on.
    assert "listing the tools before a call" not in proxy.stderr_text()


def test_a_server_that_cannot_list_costs_one_line_and_the_call_goes_on(tmp_path: Path) -> None:
    response, others, record, proxy = rows_once(tmp_path, "error")
    assert others == [] and "structuredContent" in response["result"]
    said = proxy.stderr_text()
    assert said.count("listing the tools before a call of 'rows' failed (the server "
                      "answered 'lists nothing')") == 1
    assert [m for m, _ in sent_to_server(record)][-2:] == ["tools/list", "tools/call"]


def test_a_listing_answer_over_max_line_size_ends_the_wait_at_once(tmp_path: Path) -> None:
    response, others, _, proxy = rows_once(tmp_path, "huge", 'max_line_size = "256KB"\n')
    # The call went on without waiting out the listing's time, and the client, which
    # asked for no listing, was told nothing of it.
    assert others == [] and "structuredContent" in response["result"]
    said = proxy.stderr_text()
    assert "listing the tools before a call of 'rows' failed (a message from the " \
        "upstream server was" in said
    assert "no answer within" not in said


def test_a_call_sent_just_before_the_client_closes_its_stdin_still_reaches_the_server(
    tmp_path: Path,
) -> None:
    proxy, record = start(tmp_path, "pages")
    proxy.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "rows", "arguments": {}}})
    proxy.close_stdin()  # held for the listing when the client's stdin ends
    assert proxy.proc.wait(timeout=60) == 0
    # It reached the server before the proxy ended it, as it did with no listing.
    assert [method for method, _ in sent_to_server(record)][-1] == "tools/call"


def test_names_the_server_did_not_list_a_moment_ago_make_no_listing(tmp_path: Path) -> None:
    # (Made up, most likely: a listing is made for none until a while has passed, or
    # the server says its tools changed; the unit tests of ListFirst show when.)
    proxy, record = start(tmp_path, "pages")
    try:
        call_rows(proxy)  # listed first: two pages
        for name in ("made-up", "made-up-too"):
            assert "result" in proxy.request("tools/call", {"name": name, "arguments": {}})
    finally:
        proxy.close_stdin()
    methods = [method for method, _ in sent_to_server(record)][2:]
    assert methods == ["tools/list", "tools/list", "tools/call", "tools/call", "tools/call"]


def test_a_server_that_says_its_tools_changed_is_listed_again(tmp_path: Path) -> None:
    proxy, record = start(tmp_path, "pages")
    try:
        call_rows(proxy)  # listed first: two pages
        assert "result" in proxy.request("tools/call", {"name": "change", "arguments": {}})
        # No two listings within a second of each other: calls go on until one lists.
        deadline = time.monotonic() + 10  # without it: not before 30 s
        while sent_to_server(record).count(("tools/list", True)) < 4:
            assert time.monotonic() < deadline, "no listing after the tools changed"
            assert "result" in proxy.request("tools/call", {"name": "new", "arguments": {}})
    finally:
        proxy.close_stdin()
