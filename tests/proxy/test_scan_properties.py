"""The scanner's fast path reads a message exactly as ``json.loads`` does, or declines;
a line is kept to forward as it came only when it can be."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _strategies import tricky_character
from toolcap.core._jsonraw import RawStrings, dumps_utf8
from toolcap.core._jsonsize import dumps, json_size
from toolcap.proxy._scan import NotJson, parse_line, scan_message

# Small enough that generated strings are "long" and take the scanner's own path.
LONG = 20  # longer than every key the tests write ("structuredContent")

text = st.text(alphabet=tricky_character, max_size=60)
# Characters outside the Basic Multilingual Plane (four UTF-8 bytes, a surrogate pair escaped).
astral = st.text(alphabet=st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
                 min_size=1, max_size=20)
block_text = st.one_of(text, astral, st.builds(lambda a, b: a + b, text, astral))
short_keys = st.text(alphabet="abcxyz_", min_size=1, max_size=4)  # never a long key
plain = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(short_keys, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def blocks(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "text", "resource", "image", "link"]))
    if kind == "text":
        return {"type": "text", "text": draw(block_text)}
    if kind == "resource":
        return {"type": "resource", "resource": {"uri": "file:///a", "text": draw(block_text)}}
    if kind == "image":
        return {"type": "image", "data": draw(st.text("ABCD+/=", max_size=40)),
                "mimeType": "image/png"}
    return {"type": "resource_link", "uri": "file:///b", "name": draw(text)}


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    content = draw(st.lists(blocks(), max_size=5))
    result: dict[str, Any] = {"content": content}
    if draw(st.booleans()):
        # Often the text again, as FastMCP sends it: the scanner decodes it once.
        texts = [b["text"] for b in content if b.get("type") == "text"]
        repeat = texts[0] if texts and draw(st.booleans()) else draw(block_text)
        result["structuredContent"] = {"result": repeat, "more": draw(plain)}
    if draw(st.booleans()):
        result["isError"] = draw(st.booleans())
    if draw(st.booleans()):
        result["_meta"] = draw(plain)
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(st.one_of(st.integers(), text)),
                               "result": result}
    if draw(st.booleans()):
        message = {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": draw(block_text),
                                                        "data": draw(plain)}}
    return _shuffled(message, draw(st.randoms(use_true_random=False)))


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same value with every object's keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


layouts = st.sampled_from([
    {"separators": (",", ":")},
    {"indent": 2},
    {"separators": (" , ", " : ")},
    {"indent": "\t", "ensure_ascii": False},
    {"ensure_ascii": False},
])


@settings(max_examples=400, deadline=None)
@given(messages(), layouts)
def test_the_scanner_reads_a_message_as_json_loads_does(message: dict[str, Any],
                                                        layout: dict[str, Any]) -> None:
    line = json.dumps(message, **layout).encode("utf-8", "surrogatepass")
    try:
        expected = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:  # a lone surrogate written raw: not UTF-8, the slow path's
        assert scan_message(line, long_string=LONG) is None
        return
    found = scan_message(line, long_string=LONG, steps=10**9)
    # The relay scans a line that spanned reads in the bytearray it was read into.
    assert scan_message(bytearray(line), long_string=LONG, steps=10**9) == found
    long_strings = any(len(s) - 2 >= LONG for s in _string_literals(line))
    if long_strings:
        assert found == expected
        assert json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True)
    else:
        assert found is None


def _string_literals(line: bytes) -> list[bytes]:
    """Every string literal of a valid JSON line, as its bytes (test oracle: a plain walk)."""
    out, i, inside, start = [], 0, False, 0
    while i < len(line):
        byte = line[i]
        if inside and byte == 0x5C:
            i += 2
            continue
        if byte == 0x22:
            if inside:
                out.append(line[start : i + 1])
            else:
                start = i
            inside = not inside
        i += 1
    return out


@settings(max_examples=400, deadline=None)
@given(messages(), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1,
                            max_size=4))
def test_a_damaged_line_is_read_as_json_loads_reads_it_or_declined(
    message: dict[str, Any], damage: list[tuple[int, int]]
) -> None:
    line = bytearray(json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    for where, byte in damage:
        line[where % len(line)] = byte
    found = scan_message(bytes(line), long_string=LONG, steps=10**9)
    try:
        expected = json.loads(bytes(line).decode("utf-8"))
    except (ValueError, RecursionError):  # malformed or not UTF-8: the slow path's to report
        assert found is None
        return
    assert found is None or found == expected


def test_a_long_string_as_an_object_key_is_left_to_the_slow_path() -> None:
    line = json.dumps({"k" * 100: "v" * 100}).encode()
    assert scan_message(line, long_string=LONG) is None


def test_json_text_inside_a_text_block_is_left_to_the_slow_path_once_its_quotes_run_long(
) -> None:
    inner = json.dumps([{"name": f"item {i}", "ok": True} for i in range(5000)])
    line = json.dumps({"result": {"content": [{"type": "text", "text": inner}]}}).encode()
    assert scan_message(line, long_string=LONG) is None  # too many escaped quotes to walk
    assert scan_message(line, long_string=LONG, steps=10**9) == json.loads(line)


def test_a_repeated_long_string_is_decoded_once() -> None:
    text = "line\n" * 100 + "😀"
    line = json.dumps({"content": [{"type": "text", "text": text}],
                       "structuredContent": {"result": text}}).encode()
    found = scan_message(line, long_string=LONG)
    assert found["content"][0]["text"] == text
    assert found["structuredContent"]["result"] is found["content"][0]["text"]


def test_a_backslash_run_before_a_quote_is_counted_right() -> None:
    text = 'a\\"b\\\\' + "x" * 20 + '\\\\\\"'
    line = json.dumps({"t": text, "u": ["\\" * 9 + '"' + "y" * 20]}).encode()
    assert scan_message(line, long_string=LONG) == json.loads(line)


def test_a_message_without_long_strings_is_left_to_the_plain_parse() -> None:
    assert scan_message(b'{"jsonrpc":"2.0","id":1,"result":{}}') is None


def _foreign_escapes(line: bytes, rng: random.Random) -> bytes:
    """``line`` with some of its escapable characters written the way ``dumps`` does not:
    "/" as "\\/", a short escape as its \\u form, hex in upper case."""
    out = bytearray()
    i = 0
    while i < len(line):
        if line[i] == 0x5C:  # an escape: keep or rewrite it, never split it
            pair = line[i : i + 2]
            if pair == b"\\n" and rng.random() < 0.5:
                out += b"\\u000a"
            elif pair == b"\\u" and rng.random() < 0.5:
                out += line[i : i + 6].upper().replace(b"\\U", b"\\u")
                i += 6
                continue
            else:
                out += pair
            i += 2
            continue
        out += b"\\/" if line[i] == 0x2F and rng.random() < 0.5 else line[i : i + 1]
        i += 1
    return bytes(out)


@settings(max_examples=400, deadline=None)
@given(messages(), layouts, st.randoms(use_true_random=False), st.booleans())
def test_a_value_stored_from_the_lines_bytes_is_the_bytes_dumps_gives(
    message: dict[str, Any], layout: dict[str, Any], rng: random.Random, foreign: bool
) -> None:
    line = json.dumps(message, **layout).encode("utf-8", "surrogatepass")
    if foreign:
        line = _foreign_escapes(line, rng)
    raw = RawStrings()
    found = scan_message(line, long_string=LONG, steps=10**9, raw=raw)
    if found is None:
        assert not raw  # nothing kept from a line the scanner declined
        return
    seen: dict[int, tuple[str, int]] = {}
    for value in (found, found.get("result"), found.get("error")):
        expected = dumps(value).encode("utf-8")
        assert dumps_utf8(value, raw, seen) == expected
    for text, size in seen.values():  # the sizes it notes are json_size's
        assert size == json_size(text)


def test_a_long_string_written_as_dumps_writes_it_is_spliced_from_the_line() -> None:
    text = "line\n" * 100 + 'a "quoted" \\ word\x01\x7f é 😀'
    line = json.dumps({"id": 1, "result": {"structuredContent": {"result": text}}},
                      ensure_ascii=False, separators=(",", ":")).encode()
    raw = RawStrings()
    found = scan_message(line, long_string=LONG, raw=raw)
    assert raw.canonical_token(text) is None  # an equal string, not the one read
    kept = raw.canonical_token(found["result"]["structuredContent"]["result"])
    assert kept is not None and bytes(kept) in line
    assert dumps_utf8(found["result"]["structuredContent"], raw) == json.dumps(
        {"result": text}, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=200, deadline=None)
@given(plain, st.booleans(), st.booleans())
def test_a_line_is_parsed_and_kept_to_forward_only_while_it_is_utf8(
    value: Any, broken: bool, mutable: bool
) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"v": value, "t": "ab"}}).encode()
    if broken:
        line = line.replace(b'"ab"', b'"a\xffb"')  # read with U+FFFD, never forwarded as is
    holder: list[bytes | bytearray] = [bytearray(line) if mutable else line]
    message, kept, raw = parse_line(holder)
    assert holder == []  # taken out: the caller holds the line no longer
    assert message == json.loads(line.decode("utf-8", "replace"))
    assert kept == (None if broken else line)
    assert raw is None  # a short line: no long strings read from its bytes


def test_a_line_that_is_not_json_is_refused() -> None:
    with pytest.raises(NotJson):
        parse_line([b'{"jsonrpc":"2.0","id":1,'])
