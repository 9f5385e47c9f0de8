"""Wrapping client configurations as text: JSON read with spans, entries replaced in place,
undone byte for byte, whatever the servers and the layout."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcap.core._clientconfig import is_wrapped, unwrap_text, wrap_text
from toolcap.core._errors import ConfigError
from toolcap.core._jsonspans import MAX_DEPTH, JsonSyntaxError, parse_with_spans

TOOLCAP = "/opt/tools/bin/toolcap"

PROPERTY = settings(max_examples=200, deadline=None, derandomize=True)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=3),
    max_leaves=12,
)


@PROPERTY
@given(value=json_values, indent=st.sampled_from([None, 2, 4, "\t"]))
def test_spans_parse_what_json_parses_and_each_member_span_is_its_text(
    value: Any, indent: int | str | None
) -> None:
    text = json.dumps({"root": value}, indent=indent, ensure_ascii=False)
    node, jsonc = parse_with_spans(text)
    assert node.value == json.loads(text) and not jsonc
    member = node.members["root"]
    assert json.loads(text[member.start:member.end]) == value


def test_comments_and_trailing_commas_are_read_as_jsonc() -> None:
    text = '{\n  // a comment\n  "a": [1, 2,], /* another */\n  "b": {"c": 3,},\n}\n'
    node, jsonc = parse_with_spans(text)
    assert jsonc and node.value == {"a": [1, 2], "b": {"c": 3}}


@pytest.mark.parametrize(
    ("text", "where"),
    [("{", "line 1 column 2"), ('{"a": 1}\n{', "line 2 column 1"), ('{"a" 1}', "column 6"),
     ('{"a": 1, "a": 2}', "column 10"), ("/* open", "line 1 column 1")],
)
def test_text_that_is_not_json_is_an_error_naming_the_place(text: str, where: str) -> None:
    with pytest.raises(JsonSyntaxError, match=where):
        parse_with_spans(text)


def test_hostile_nesting_is_an_error_not_a_crash() -> None:
    deep = '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(JsonSyntaxError, match=f"nested deeper than {MAX_DEPTH}"):
        parse_with_spans(deep)
    deep_object = '{"a":' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(JsonSyntaxError, match=f"nested deeper than {MAX_DEPTH}"):
        parse_with_spans(deep_object)


names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1,
                max_size=10)
words = st.text(st.characters(codec="utf-8"), max_size=12)
# Names an HTTP header may have (RFC 9110 tokens), near misses that map to one variable
# name among them; and the values a header may hold (printable ASCII and tabs).
header_names = st.sampled_from(["Authorization", "X-Api-Key", "X_API_KEY", "x-api-key",
                                "TOOLCAP_HEADER_X_API_KEY"]) | st.text(
    st.sampled_from(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"),
    min_size=1, max_size=12)
header_values = st.text(st.characters(min_codepoint=32, max_codepoint=126) | st.just("\t"),
                        max_size=12)
stdio_entries = st.fixed_dictionaries(
    {"command": words},
    optional={"args": st.lists(words, max_size=4), "env": st.dictionaries(words, words,
                                                                          max_size=2),
              "type": st.just("stdio"), "cwd": words},
)
http_entries = st.sampled_from(["url", "serverUrl", "httpUrl"]).flatmap(
    lambda url_key: st.fixed_dictionaries(
        {url_key: words},
        optional={"headers": st.dictionaries(header_names, header_values, max_size=3).filter(
                      lambda headers: len({name.lower() for name in headers}) == len(headers)),
                  "env": st.dictionaries(words, words, max_size=2),
                  "type": st.just("http"), "timeout": st.integers(0, 10**6)},
    )
)
configs = st.dictionaries(names, stdio_entries | http_entries, min_size=1, max_size=5)


@PROPERTY
@given(servers=configs, indent=st.sampled_from([None, 2, 4, "\t"]),
       key=st.sampled_from(["mcpServers", "servers"]), crlf=st.booleans())
def test_wrap_then_undo_gives_back_the_same_text_and_wrapping_twice_changes_nothing(
    servers: dict[str, Any], indent: int | str | None, key: str, crlf: bool
) -> None:
    text = json.dumps({"other": [1, {"x": "y"}], key: servers}, indent=indent,
                      ensure_ascii=False) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    wrapped = wrap_text(text, "f.json", TOOLCAP)
    after = json.loads(wrapped.text)
    assert after["other"] == [1, {"x": "y"}] and list(after[key]) == list(servers)
    assert all(is_wrapped(entry) for entry in after[key].values())
    for name, entry in servers.items():
        new = after[key][name]
        if "command" in entry:
            assert new["args"] == ["proxy", "--", entry["command"], *entry.get("args", [])]
            assert new.get("env") == entry.get("env")
        else:
            headers = entry.get("headers", {})
            url = next(entry[k] for k in ("url", "serverUrl", "httpUrl") if k in entry)
            assert new["args"][:3] == ["proxy", "--url", url]
            assert new.get("timeout") == entry.get("timeout")
            # Each header's value is in the env (no secret in args), named by --header-env.
            assert new["args"][3::2] == ["--header-env"] * len(headers)
            pairs = [arg.split("=", 1) for arg in new["args"][4::2]]
            assert [name for name, _ in pairs] == list(headers)
            env = new.get("env", {})
            assert {name: env[variable] for name, variable in pairs} == headers
            assert {k: env[k] for k in entry.get("env", {})} == entry.get("env", {})
            assert len(env) == len(entry.get("env", {})) + len(headers)
            assert not any(value in new["args"][3:] for value in headers.values() if value)
    assert wrap_text(wrapped.text, "f.json", TOOLCAP).text == wrapped.text
    assert unwrap_text(wrapped.text, "f.json", wrapped.records).text == text


def test_an_entry_that_signs_in_with_oauth_or_is_not_a_server_is_skipped_and_kept() -> None:
    text = json.dumps({"mcpServers": {
        "a": {"url": "https://x/mcp", "oauth": {"clientId": "c"}},
        "b": {"disabled": True},
        "c": "nonsense",
    }})
    change = wrap_text(text, "f.json", TOOLCAP)
    assert change.text == text and [name for name, _ in change.skipped] == ["a", "b", "c"]


def test_a_wrapped_entry_without_a_record_is_left_wrapped_with_the_reason() -> None:
    text = json.dumps({"mcpServers": {"a": {"command": "/x/toolcap", "args": ["proxy", "--",
                                                                           "srv"]}}})
    change = unwrap_text(text, "f.json", {})
    assert change.text == text
    assert change.skipped == [("a", "no record of its original entry")]


def test_an_entry_changed_since_it_was_wrapped_is_not_undone_and_says_why() -> None:
    text = json.dumps({"mcpServers": {"a": {"command": "srv", "env": {"TOKEN": "old"}},
                                      "b": {"command": "other"}}}, indent=2)
    wrapped = wrap_text(text, "f.json", TOOLCAP)
    edited = wrapped.text.replace('"old"', '"new"')  # the user changed the wrapped entry
    change = unwrap_text(edited, "f.json", wrapped.records)
    assert change.done == ["b"] and [name for name, _ in change.skipped] == ["a"]
    assert "changed since it was wrapped" in change.skipped[0][1]
    assert json.loads(change.text)["mcpServers"]["a"]["env"] == {"TOKEN": "new"}
    assert list(change.records) == ["/mcpServers/b"]  # a's record is kept for later


def test_an_entry_only_laid_out_again_by_the_client_is_undone() -> None:
    text = json.dumps({"mcpServers": {"a": {"command": "srv", "args": ["x"]}}}, indent=2)
    wrapped = wrap_text(text, "f.json", TOOLCAP)
    relaid = json.dumps(json.loads(wrapped.text), indent=4)  # same values, another layout
    change = unwrap_text(relaid, "f.json", wrapped.records)
    assert change.done == ["a"]
    assert json.loads(change.text) == json.loads(text)


def test_an_empty_or_missing_server_list_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no servers to wrap"):
        wrap_text('{"servers": {}}', "f.json", TOOLCAP)


def test_an_entry_whose_headers_no_request_can_carry_is_skipped_and_kept() -> None:
    text = json.dumps({"mcpServers": {
        "accented": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer t\u00f6ken"}},
        "spaced": {"url": "https://x/mcp", "headers": {"X Key": "v"}},
        "fine": {"url": "https://x/mcp", "headers": {"X-Key": "v\tw"}},
        "twice": {"url": "https://x/mcp", "headers": {"X-Api-Key": "a", "x-api-key": "b"}},
    }})
    change = wrap_text(text, "f.json", TOOLCAP)
    assert change.done == ["fine"]
    reasons = dict(change.skipped)
    assert "the value of Authorization holds a character" in reasons["accented"]
    assert "t\u00f6ken" not in reasons["accented"]  # a value may be a secret: never quoted
    assert "its name 'X Key' holds a character" in reasons["spaced"]
    assert "differ only in case" in reasons["twice"]  # the proxy would refuse to start
