"""Properties of the structural cut over generated JSON documents: parses, bound, kept as is."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _strategies import json_documents, large_text, write_json
from toolcap.core._jsoncut import ELISION_KEY, cut_json
from toolcap.core._jsondoc import resolve_pointer, wire_cost
from toolcap.core._utf8 import sanitize, utf8_size

PROPERTY = settings(max_examples=250, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NOTE = re.compile(r"\[toolcap: (.*?)(?:; full output: [^\]]*)?\]\Z", re.S)
RANGE = re.compile(r"\d+ (?:items?|keys?) elided \((/[^ ]*)(?: … (/[^ ]*))?\)\Z")
UNDER = re.compile(r"\d+ (?:items?|keys?) elided under (/\S*)\Z")
AT = re.compile(r".* elided at (/\S*)\Z")
STRING_MARKER = "\n[toolcap: output truncated"


def note_of(value: object) -> str | None:
    if isinstance(value, str):
        found = NOTE.match(value)
        if found and not value.startswith("[toolcap: output truncated"):
            return found.group(1)
    return None


def check_pointer(original: object, where: str) -> None:
    resolve_pointer(original, "" if where == "/" else where)  # raises if it does not exist


def same_number(kept: object, original: object) -> bool:
    return isinstance(kept, (int, float)) and kept == original


def check(kept: object, original: object, path: str) -> None:
    """``kept`` (from the cut) stands for ``original``: equal, cut inside, or a note."""
    if kept == original or same_number(kept, original):
        return
    note = note_of(kept)
    collapsed = AT.match(note) if note is not None else None
    if collapsed:  # the whole value collapsed into a note naming where it was
        check_pointer(ROOT[0], collapsed.group(1))
        assert path.startswith(collapsed.group(1).rstrip("/"))
        return
    if isinstance(original, str):
        assert isinstance(kept, str) and "[toolcap: output truncated" in kept, kept[:200]
        head = "" if kept.startswith("[toolcap: ") else kept[: kept.index(STRING_MARKER)]
        assert sanitize(original).startswith(head)
        return
    if isinstance(original, dict):
        assert isinstance(kept, dict)
        names = list(original)
        kept_names = [k for k in kept if not (k.startswith(ELISION_KEY) and k not in original)]
        assert kept_names == names[: len(kept_names)]  # first keys, in order
        extra = [k for k in kept if k not in kept_names]
        assert len(extra) <= 1
        for name in kept_names:
            check(kept[name], original[name], f"{path}/{escape(name)}")
        if extra:
            note = note_of(kept[extra[0]])
            assert note is not None
            check_note(note, path)
        return
    assert isinstance(original, list) and isinstance(kept, list), (kept, original)
    index = 0
    for item in kept:
        note = note_of(item)
        found = RANGE.match(note) if note else None
        if found:
            first, last = found.group(1), found.group(2) or found.group(1)
            check_note(note or "", path)
            assert first == f"{path}/{index}"
            index = int(last.rsplit("/", 1)[1]) + 1
            continue
        if note and UNDER.match(note):
            check_note(note, path)
            return
        check(item, original[index], f"{path}/{index}")
        index += 1
    assert index == len(original)


def check_note(note: str, path: str) -> None:
    found = RANGE.match(note)
    if found:
        for where in found.groups():
            if where:
                check_pointer(ROOT[0], where)
                assert where.startswith(path + "/")
        return
    under = UNDER.match(note)
    assert under, note
    check_pointer(ROOT[0], under.group(1))


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


ROOT: list[object] = [None]


@PROPERTY
@given(document=json_documents, limit=st.integers(1024, 40_000),
       indent=st.sampled_from([None, "  ", "    ", "\t"]), ascii_only=st.booleans(),
       strategy=st.sampled_from(["head", "tail", "head_tail"]), wire=st.booleans(),
       reference=st.sampled_from([None, "toolcap:" + "ab" * 16]))
def test_a_cut_document_parses_fits_and_keeps_every_leaf_as_it_was(
    document: object, limit: int, indent: str | None, ascii_only: bool, strategy: str,
    wire: bool, reference: str | None,
) -> None:
    text = write_json(document, indent, ascii_only=ascii_only)
    original = json.loads(text)
    ROOT[0] = original
    result = cut_json(text, limit, strategy=strategy, wire=wire,  # type: ignore[arg-type]
                      reference=reference)
    assert result is not None
    size = wire_cost(result.text) if wire else utf8_size(result.text)
    if not result.truncated:
        assert result.text is text
        assert size <= limit
        return
    assert size <= limit
    assert result.kept_bytes == utf8_size(result.text)
    delivered = json.loads(result.text)
    assert isinstance(delivered, type(original))
    check(delivered, original, "")
    if reference is not None and delivered != original:  # else only the layout changed
        assert reference in result.text
    again = cut_json(result.text, limit, strategy=strategy, wire=wire,  # type: ignore[arg-type]
                     reference=reference)
    assert again is not None and again.text is result.text and not again.truncated


json_lines_texts = st.lists(json_documents, min_size=1, max_size=40).map(
    lambda values: "\n".join(json.dumps(value) for value in values))


@PROPERTY
@given(text=st.one_of(large_text(), json_lines_texts, st.builds(
           lambda unit, n: unit * n, st.text(max_size=90), st.integers(1, 300))),
       limit=st.integers(1024, 6000), keep=st.booleans())
def test_a_cut_of_the_texts_utf8_bytes_equals_the_cut_of_the_text(
    text: str, limit: int, keep: bool
) -> None:
    # The seam cuts a stored text from the bytes it stored, JSON Lines tested
    # on the text's first characters: both must give the text's own cut.
    from toolcap import keep_lines
    from toolcap.core._jsoncut import cut_by_format

    whole = sanitize(text)
    options = {"keep_lines": keep_lines()} if keep else {}
    assert cut_by_format(whole.encode("utf-8"), limit, text=whole, **options) == cut_by_format(
        text, limit, text=whole, **options)


python_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.tuples(inner, inner),
                            st.dictionaries(st.one_of(st.text(max_size=8), st.integers()),
                                            inner, max_size=6)),
    max_leaves=30)


@PROPERTY
@given(value=st.one_of(json_documents, python_values))
def test_a_value_that_parses_back_is_what_parsing_its_serialization_gives(value: object) -> None:
    # The seam cuts such a structuredContent as it is, instead of parsing its JSON.
    from toolcap.core._jsondoc import DECODER, parses_back
    from toolcap.core._jsonsize import dumps

    try:
        parsed = DECODER.decode(dumps(value))
    except ValueError:  # NaN or Infinity: not JSON
        assert not parses_back(value)
        return
    if parses_back(value):
        assert parsed == value
        assert json.dumps(parsed) == json.dumps(value)  # same types, same key order
    elif not any(isinstance(x, float) for x in _leaves(value)):
        assert parsed != value or _types(parsed) != _types(value)


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [*value.keys(), *(x for v in value.values() for x in _leaves(v))]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def _types(value: object) -> object:
    if isinstance(value, dict):
        return ("dict", [(type(k), _types(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value), [_types(v) for v in value])
    return type(value)
