"""The proxy's own tool: read back what a cut kept, by bytes, by lines or by search."""

from __future__ import annotations

from typing import Any

from ..core._jsondoc import MAX_STRUCTURAL_BYTES
from ..core._jsonpart import select_stored
from ..core._sizes import human_size
from ..core._utf8 import head_boundary, tail_boundary
from ..protocols import ArtifactReader
from ..store import ArtifactInfo, grep_rows

__all__ = ["READER_KEY", "is_toolcap_reader", "read_artifact_definition", "read_artifact_result"]

#: The tool ``_meta`` key that marks a toolcap proxy's own reader, so that a proxy in
#: front of another one knows where the references it did not make can be read.
READER_KEY = "toolcap/readArtifact"

# A read that names no range shows this much from the start.
_DEFAULT_LENGTH = 16 * 1024
_DEFAULT_LINES = 200
_MAX_CONTEXT = 50

DESCRIPTION = (
    "Read the full output of an earlier tool result that was cut to fit the conversation. "
    "A cut result contains a marker with a reference such as toolcap:3f2a9c…; pass it as "
    "`ref` and read only what you need: a line range (`start_line`, `end_line`), a byte "
    "range (`offset`, `length`), or a regular-expression search (`pattern`, RE2 syntax: "
    "no backreferences or lookaround; `context` lines around each match). A search "
    "shows each match as LINE:BYTE_OFFSET:TEXT; on a very long line (say one-line JSON) "
    "TEXT is a window around the match, cut ends marked [...]: pass that byte offset as "
    "`offset` to read on from there. A JSON original (its cut names parts by JSON "
    "Pointer, e.g. /results/3 … /results/9814) reads by `pointer` (e.g. /results/500), "
    "and an array's items by `pointer` with `start` and `count`. Prefer a search or a "
    "narrow range to re-reading everything: this tool's output is bounded like any other."
)


def read_artifact_definition(name: str) -> dict[str, Any]:
    """The tools/list entry of the tool."""
    integer = {"type": "integer", "minimum": 0}
    return {
        "name": name,
        "title": "Read a kept tool output",
        "description": DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "ref": {
                    "type": "string",
                    "description": "The artifact reference from the marker, e.g. toolcap:3f2a9c…",
                },
                "start_line": {**integer, "minimum": 1, "description": "First line (1-based)."},
                "end_line": {**integer, "minimum": 1, "description": "Last line, inclusive."},
                "offset": {**integer, "description": "First byte (0-based)."},
                "length": {**integer, "minimum": 1, "description": "Number of bytes."},
                "pattern": {
                    "type": "string",
                    "description": "Regular expression (RE2 syntax) to search for, line by line.",
                },
                "context": {
                    **integer,
                    "maximum": _MAX_CONTEXT,
                    "description": "Lines of context around each match (default 2).",
                },
                "max_matches": {**integer, "minimum": 1, "description": "Default 50."},
                "pointer": {
                    "type": "string",
                    "description": "JSON Pointer (RFC 6901) into a JSON original, e.g. "
                    "/results/500; \"\" is the whole document.",
                },
                "start": {**integer, "description": "With pointer to an array: first item."},
                "count": {**integer, "minimum": 1,
                          "description": "With pointer to an array: number of items."},
                "ignore_case": {"type": "boolean"},
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
        "_meta": {READER_KEY: 1},
    }


def is_toolcap_reader(tool: dict[str, Any]) -> bool:
    """Whether an upstream tool says it is a toolcap proxy's ``read_artifact``."""
    meta = tool.get("_meta")
    return isinstance(meta, dict) and meta.get(READER_KEY) == 1 and isinstance(
        tool.get("name"), str)


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _int(arguments: dict[str, Any], key: str, default: int | None, low: int) -> int | None:
    value = arguments.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{key} must be an integer >= {low}")
    return value


def read_artifact_result(store: object, arguments: Any) -> dict[str, Any]:
    """Answer one call from ``store``, the proxy's artifact store (or ``None``).

    A store that cannot read back (not an :class:`ArtifactReader`) is reported as none.

    The first content block is exactly what was read (for a byte range, the
    bytes decoded as UTF-8); a second, short block says what it was. When
    nothing but white space was read (no match, an empty range), the note is
    the only block: model APIs refuse a text block without visible text, so a
    host forwarding the reply would fail.
    """
    if not isinstance(arguments, dict) or not isinstance(arguments.get("ref"), str):
        return _error("read_artifact needs `ref`, the toolcap:… reference from a cut result.")
    if not isinstance(store, ArtifactReader):
        return _error("read_artifact: no artifact store is configured for this proxy.")
    ref = arguments["ref"].strip()
    try:
        info = store.stat(ref)
        where = f"{info.ref} ({human_size(info.bytes)}, {info.lines} lines)"
        if "pointer" in arguments or "start" in arguments or "count" in arguments:
            text, note = _json_part(store, info, arguments, where)
        elif isinstance(arguments.get("pattern"), str):
            text, note = _grep(store, ref, arguments)
        elif "start_line" in arguments or "end_line" in arguments:
            start = _int(arguments, "start_line", 1, 1) or 1
            end = _int(arguments, "end_line", start + _DEFAULT_LINES - 1, 1)
            lines = store.read_lines(ref, start, end)
            text = "".join(line + "\n" for line in lines)
            last = start + len(lines) - 1
            note = (
                f"lines {start}–{last} of {where}" if lines else f"no lines from {start} in {where}"
            )
        else:
            medium = _medium(store.read_bytes(ref, 0, 16))
            if medium:
                return _error(f"read_artifact: {info.ref} is {medium} ({human_size(info.bytes)}),"
                              " not text; it cannot be shown here.")
            text, note = _byte_range(store, ref, info.bytes, arguments, where)
    except ValueError as exc:
        return _error(f"read_artifact: {_redacted(str(exc), store)}")
    except Exception as exc:  # the store's errors (bad or unknown reference, I/O) are one line
        return _error(f"read_artifact: {_redacted(str(exc), store)}")
    if not text.strip():
        if text:
            note += f"; it is {len(text)} characters of white space only"
        return {"content": [{"type": "text", "text": f"[{note}]"}]}
    return {"content": [{"type": "text", "text": text}, {"type": "text", "text": f"[{note}]"}]}


def _redacted(message: str, store: object) -> str:
    """``message`` without the store's location: the model has no use for the user's paths."""
    location = str(getattr(store, "location", "") or "")
    return message.replace(location, "<store>") if len(location) > 1 else message


# Magic numbers of the media a cut stores whole: shown as a note, never as mojibake.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"), (b"%PDF-", "a PDF document"), (b"ID3", "an MP3 audio clip"),
    (b"OggS", "an Ogg audio clip"), (b"fLaC", "a FLAC audio clip"),
)


def _medium(head: bytes) -> str | None:
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] in (b"WEBP", b"WAVE"):
        return "a WebP image" if head[8:12] == b"WEBP" else "a WAV audio clip"
    return None


def _byte_range(
    store: ArtifactReader, ref: str, size: int, arguments: dict[str, Any], where: str
) -> tuple[str, str]:
    """The bytes asked for, widened to whole UTF-8 characters; the note says which were sent."""
    offset = _int(arguments, "offset", 0, 0) or 0
    length = _int(arguments, "length", _DEFAULT_LENGTH, 1) or _DEFAULT_LENGTH
    if offset > size:
        raise ValueError(f"offset {offset} is past the end of {ref} ({size} bytes)")
    end = min(size, offset + length)
    # Up to three bytes either side complete a character the range would split.
    low = max(0, offset - 3)
    window = store.read_bytes(ref, low, end + 3 - low)
    first = low + head_boundary(window, offset - low)
    last = low + tail_boundary(window, end - low)
    text = window[first - low : last - low].decode("utf-8", "replace")
    note = f"bytes {first}–{last} of {where}"
    if (first, last) != (offset, end):
        note += f"; asked for {offset}–{end}, widened to whole characters"
    return text, note


def _json_part(
    store: ArtifactReader, info: ArtifactInfo, arguments: dict[str, Any], where: str
) -> tuple[str, str]:
    """The part of a JSON original a pointer (and an item range) names.

    An original stored with a JSON index (a document of 1 MB or more, see
    :mod:`toolcap.core._jsonindex`) is read through it: only the smallest indexed
    span holding the part is read and parsed, at any size of the original, as
    long as that span is at most 64 MB. Any other original is parsed whole on
    each read, so it must be kept whole and at most 64 MB.
    """
    pointer = arguments.get("pointer", "")
    if not isinstance(pointer, str):
        raise ValueError("pointer must be a string such as /results/500")
    start = _int(arguments, "start", None, 0)
    count = _int(arguments, "count", None, 1)
    ref = info.ref
    if info.json_index is None and (info.partial or info.bytes > MAX_STRUCTURAL_BYTES):
        raise ValueError(f"{ref} is not kept whole or is over 64 MB, so it cannot be read by"
                         " pointer; use a search or a byte range")
    text, what = select_stored(info.json_index, lambda low, high: store.read_bytes(
        ref, low, high - low), info.bytes, pointer, start, count)
    return text, f"{what} of {where}"


def _grep(store: ArtifactReader, ref: str, arguments: dict[str, Any]) -> tuple[str, str]:
    context = _int(arguments, "context", 2, 0) or 0
    if context > _MAX_CONTEXT:
        raise ValueError(f"context must be at most {_MAX_CONTEXT}")
    max_matches = _int(arguments, "max_matches", 50, 1) or 50
    found = store.grep(
        ref,
        arguments["pattern"],
        context=context,
        max_matches=max_matches,
        ignore_case=bool(arguments.get("ignore_case", False)),
    )
    rows = grep_rows(found)
    count = sum(len(match.offsets) for match in found.matches)
    note = f"{count} match{'es' if count != 1 else ''} of {arguments['pattern']!r} in {ref}"
    if found.truncated:
        note += f" (first {count} shown; narrow the pattern or raise max_matches)"
    if count:
        note += "; rows are LINE:BYTE_OFFSET:TEXT, read around one with offset and length"
    return "".join(row + "\n" for row in rows), note
