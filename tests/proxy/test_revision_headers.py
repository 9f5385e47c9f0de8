"""The headers a 2026-07-28 request carries beside its body, as the proxy's HTTP client
sends them to a `--url` server: always safe on one header line, and read back by the
official SDK's server to the very name in the body."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.inbound import decode_header_value

from toolcap.proxy._revision import (
    answer_result,
    negotiated_revision,
    request_headers,
    revision_headers,
)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


@settings(max_examples=300, deadline=None)
@given(name=st.text(max_size=80), method=st.sampled_from(["tools/call", "prompts/get"]))
def test_a_name_rides_in_a_header_line_and_reads_back_as_itself(name: str, method: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": method,
               "params": {"name": name, "_meta": META}}
    headers = revision_headers(message)
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-method"] == method
    value = headers["mcp-name"]
    assert value.isascii() and value.isprintable()
    if name.encode("utf-8", "surrogatepass") == name.encode("utf-8", "replace"):
        assert decode_header_value(value) == name


def test_a_resource_read_names_its_uri_and_a_list_names_nothing() -> None:
    read = {"method": "resources/read", "params": {"uri": "file:///a b", "_meta": META}}
    assert revision_headers(read)["mcp-name"] == "file:///a b"
    listing = {"method": "tools/list", "params": {"_meta": META}}
    assert "mcp-name" not in revision_headers(listing)


def test_a_request_of_a_revision_negotiated_by_initialize_carries_none() -> None:
    assert revision_headers({"method": "tools/call", "params": {"name": "x"}}) == {}
    assert revision_headers({"method": "tools/call\r\nX: 1", "params": {"_meta": META}}) == {}


def test_an_answer_is_read_for_its_result_only_when_both_are_objects() -> None:
    assert answer_result(b'{"id":1,"result":{"a":1}}') == ({"id": 1, "result": {"a": 1}},
                                                         {"a": 1})
    for answer in (b"[1]", b'{"id":1,"result":[]}', b'{"id":1,"error":{}}', b"{", b"[" * 10**5):
        assert answer_result(answer) is None
    assert negotiated_revision(b'{"result":{"protocolVersion":"2025-06-18"}}') == "2025-06-18"
    assert negotiated_revision(b'{"result":{"protocolVersion":7}}') is None


def test_a_revision_no_header_line_can_carry_is_left_to_the_server() -> None:
    headers = request_headers("s1", "2025-06-18\r\nx: y")
    assert headers["mcp-session-id"] == "s1" and "mcp-protocol-version" not in headers
    stream = request_headers(None, "2025-06-18", stream_only=True)
    assert stream == {"accept": "text/event-stream", "mcp-protocol-version": "2025-06-18"}
