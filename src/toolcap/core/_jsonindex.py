"""A structural index of a JSON document, made once when it is stored, for reads by pointer.

Reading ``/results/500`` of a 200 MB original should not parse 200 MB. When a
document of at least :data:`INDEX_MIN_BYTES` is stored, :func:`build_index`
walks it once and records, by JSON Pointer, the byte span of every container
of at least one *step* of bytes (``max(MIN_STEP, size / TARGET_MARKS)``), with:

- for an array, its item count and *marks* ``(item index, byte offset)``: the
  first item and then the first item at least a step after the last mark;
- for an object, every member's key and the byte span of its value (unless the
  object has more than :data:`MAX_MEMBERS` members, keys too long to list, or
  a key twice: then no list, and a read inside it parses the object).

Offsets are UTF-8 byte offsets of the stored bytes. The index is bounded: its
record form is at most :data:`MAX_INDEX_BYTES` (about) — past that, the step
doubles, smaller containers are dropped and marks thinned until it fits.

The walk parses the containers it indexes itself and hands each value below to
the C decoder; a container big enough to be indexed inside is decoded again as
it is walked, within :data:`DECODE_BUDGET` decodes of the document in all; an
object that cannot be listed is decoded whole and not walked; runs of plain
array items are checked and counted by one linear pattern. So the walk costs
about one ``json.loads`` (``benchmarks/bench_jsoncut.py --pointer``). A
document that does not parse, or whose bytes are not UTF-8, gets no index, so
it is read as before. The index's types and record form are
:mod:`toolcap.core._jsonrecord`; reading through it is
:mod:`toolcap.core._jsonpart`. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ._jsondoc import (
    MAX_STRUCTURAL_BYTES,
    detect_style,
    escape_token,
    looks_like_document,
    reject_constant,
)
from ._jsonrecord import Container, JsonIndex, key_cost

__all__ = [
    "INDEX_MIN_BYTES",
    "HeldDocument",
    "build_index",
    "index_of",
]

#: Smaller documents are parsed whole on each read (a few milliseconds).
INDEX_MIN_BYTES = 1 << 20
#: Least step between marks, in bytes.
MIN_STEP = 16 * 1024
#: Marks per document the step aims at (the step grows with the document).
TARGET_MARKS = 1024
#: About the most bytes an index's record takes.
MAX_INDEX_BYTES = 128 * 1024
#: Containers below this depth are not indexed (their parent is).
MAX_DEPTH = 32
#: An object with more members than this is indexed without its member list.
MAX_MEMBERS = 1024
_MAX_POINTER = 1024  # characters of a container's pointer, else not indexed



# What the walk checks and skips values with (floats stay floats: only where they end matters).
_CHECK = json.JSONDecoder(parse_constant=reject_constant)
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- building
_SPACE = re.compile(r"[ \t\n\r]*")
# A run of array items that are numbers, literals or strings with no comma, escape or
# control character, each followed by its comma: their count is the commas', and the
# pattern is JSON's own grammar for them, so a run is checked as the decoder would.
_SCALAR_RUN = re.compile(
    r'(?:(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null'
    r'|"[^"\\,\x00-\x1f]*")[ \t\n\r]*,[ \t\n\r]*)+')
#: The walk decodes at most this many times the document (a big container is decoded
#: again to be walked inside); past it, containers are no longer walked inside.
DECODE_BUDGET = 3


class _Walk:
    def __init__(self, text: str, step: int) -> None:
        self.text = text
        self.step = step
        self.nodes: dict[str, Container] = {}  # positions in characters until converted
        self.order: list[str] = []  # the nodes' pointers as they were added
        self.budget = DECODE_BUDGET * len(text)  # characters the decoder may still take

    def skip(self, at: int) -> int:
        found = _SPACE.match(self.text, at)
        assert found is not None  # it matches the empty string
        return found.end()

    def decode(self, at: int) -> int:
        """Check the value at ``at`` with the decoder; its end."""
        _, end = _CHECK.raw_decode(self.text, at)
        self.budget -= end - at
        return int(end)

    def value(self, at: int, depth: int, where: str, walk_arrays: bool) -> int:
        """Check the value at ``at``, indexing it if it is a big container; its end."""
        char = self.text[at : at + 1]
        indexable = depth <= MAX_DEPTH and len(where) <= _MAX_POINTER
        if char == "[" and walk_arrays and indexable:
            return self.array(at, depth, where)
        end = self.decode(at)
        if (char in "[{" and indexable and end - at >= self.step
                and self.budget >= end - at):
            # Big enough to be indexed inside: walk it (its values are decoded again).
            return self.array(at, depth, where) if char == "[" else self.object(at, depth, where)
        return end

    def array(self, start: int, depth: int, where: str) -> int:
        text, step = self.text, self.step
        marks: list[tuple[int, int]] = []
        at = self.skip(start + 1)
        count = 0
        if text.startswith("]", at):
            return self.close(start, at + 1, Container(start, at + 1, 0, True), where)
        while True:
            if not marks or at - marks[-1][1] >= step:
                marks.append((count, at))
            run = _SCALAR_RUN.match(text, at, marks[-1][1] + step)  # up to the next mark
            if run is not None:
                count += text.count(",", at, run.end())
                at = self.skip(run.end())  # the window may end inside the white space
                continue
            at = self.skip(self.value(at, depth + 1, f"{where}/{count}", False))
            count += 1
            if text.startswith("]", at):
                node = Container(start, at + 1, count, True, marks=tuple(marks))
                return self.close(start, at + 1, node, where)
            if not text.startswith(",", at):
                raise ValueError("expected , or ]")
            at = self.skip(at + 1)

    def object(self, start: int, depth: int, where: str) -> int:
        text = self.text
        members: list[tuple[str, int, int]] = []
        seen: set[str] = set()
        added = len(self.order)
        at = self.skip(start + 1)
        if not text.startswith("}", at):
            while True:
                if not text.startswith('"', at):
                    raise ValueError("expected a key")
                key, at = _scanstring(text, at + 1)
                if key in seen or len(members) == MAX_MEMBERS:
                    return self.unlisted(start, where, added)
                seen.add(key)
                at = self.skip(at)
                if not text.startswith(":", at):
                    raise ValueError("expected :")
                at = self.skip(at + 1)
                end = self.value(at, depth + 1, f"{where}/{escape_token(key)}", True)
                members.append((key, at, end))
                at = self.skip(end)
                if text.startswith("}", at):
                    break
                if not text.startswith(",", at):
                    raise ValueError("expected , or }")
                at = self.skip(at + 1)
        if sum(key_cost(key) for key in seen) > MAX_INDEX_BYTES // 4:
            return self.unlisted(start, where, added)
        node = Container(start, at + 1, len(members), False, members=tuple(members))
        return self.close(start, at + 1, node, where)

    def unlisted(self, start: int, where: str, added: int) -> int:
        """An object whose members are not listed: a read inside it parses it whole, so
        it is decoded whole here, and what was indexed inside it is dropped."""
        while len(self.order) > added:
            del self.nodes[self.order.pop()]
        end = self.decode(start)
        return self.close(start, end, Container(start, end, 0, False), where)

    def close(self, start: int, end: int, node: Container, where: str) -> int:
        if end - start >= self.step or where == "":
            self.nodes[where] = node
            self.order.append(where)
        return end


def index_of(stored: bytes) -> JsonIndex | None:
    """The index of the stored bytes of a whole original, if it is a JSON document worth one.

    Documents under :data:`INDEX_MIN_BYTES`, bytes that are not UTF-8, and an object
    whose one member is a string (:func:`_one_string_member`) get none.
    """
    # A document starts within its first bytes (4 KB of white space first: no index).
    if len(stored) < INDEX_MIN_BYTES or stored[:4096].lstrip(b" \t\n\r")[:1] not in (b"{", b"["):
        return None
    if _one_string_member(stored):
        return None
    try:
        text = stored.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return build_index(text)


# An object's start up to its first member's value, when that value is a string (a
# key with no escape: the common case is all the shortcut below is for).
_STRING_MEMBER_HEAD = re.compile(
    rb'[ \t\n\r]*\{[ \t\n\r]*"[^"\\\x00-\x1f]{0,256}"[ \t\n\r]*:[ \t\n\r]*"')
_OBJECT_END = re.compile(rb"[ \t\n\r]*\}[ \t\n\r]*\Z")
#: Escaped quotes the shortcut steps over per MB before it leaves the question to the walk.
_QUOTES_PER_MB = 256


def _one_string_member(stored: bytes) -> bool:
    """Whether ``stored`` looks like an object whose one member is a string (the
    ``{"result": "..."}`` a tool that returns a string sends as ``structuredContent``).

    Its index would buy nothing: every read by pointer parses that string, or fails,
    as it does without one. Found with a search for the string's closing quote (a
    string with more escaped quotes than a few per MB is left to the walk); the
    bytes are not checked further, which is safe: with no index they are parsed
    whole when read, and found invalid then if they are.
    """
    head = _STRING_MEMBER_HEAD.match(stored, 0, 4096)
    if head is None:
        return False
    steps = _QUOTES_PER_MB * (len(stored) >> 20) + 64
    end = head.end() - 1
    while steps > 0:
        end = stored.find(b'"', end + 1)
        if end < 0:
            return False
        escapes = 0
        while stored[end - 1 - escapes] == 0x5C:  # a backslash
            escapes += 1
        if escapes % 2 == 0:
            return _OBJECT_END.match(stored, end + 1) is not None
        steps -= 1
    return False


class HeldDocument:
    """A stream's bytes, held while they may still be one JSON document worth an index.

    A streamed write feeds each chunk; the bytes are dropped as soon as they
    cannot be (the first non-blank byte is not ``{`` or ``[``, or more than
    ``limit`` bytes came, :data:`MAX_STRUCTURAL_BYTES` at most), so a stream costs
    at most that much memory for its index.
    """

    __slots__ = ("_chunks", "_limit", "_opened", "_size")

    def __init__(self, limit: int | None = None) -> None:
        self._chunks: list[bytes] | None = []
        self._limit = MAX_STRUCTURAL_BYTES if limit is None else min(limit, MAX_STRUCTURAL_BYTES)
        self._size = 0
        self._opened = False  # a non-blank byte came

    def feed(self, data: bytes) -> None:
        """Hold ``data`` (the next chunk) while the stream may still be a document."""
        if self._chunks is None:
            return
        self._size += len(data)
        if self._size > self._limit:
            self._chunks = None
            return
        if not self._opened:
            opening = data.lstrip(b" \t\n\r")[:1]
            self._opened = bool(opening)
            if opening and opening not in (b"{", b"["):
                self._chunks = None
                return
        self._chunks.append(data)

    def index(self) -> JsonIndex | None:
        """The index of what was fed, if it is a document worth one; the bytes are let go."""
        chunks, self._chunks = self._chunks, None
        return None if chunks is None else index_of(b"".join(chunks))

    def drop(self) -> None:
        """Let the bytes go: there will be no index."""
        self._chunks = None


def build_index(text: str, *, min_step: int = MIN_STEP) -> JsonIndex | None:
    """The index of JSON document ``text`` (an object or array), or ``None`` if it is not one.

    ``text`` must be what is stored, decoded: offsets are its UTF-8 bytes.
    """
    if not looks_like_document(text):
        return None
    step = max(min_step, len(text) // TARGET_MARKS)
    walk = _Walk(text, step)
    try:
        root = walk.skip(0)
        end = walk.array(root, 0, "") if text[root] == "[" else walk.object(root, 0, "")
        if walk.skip(end) != len(text):
            return None
    except (ValueError, RecursionError):
        return None
    nodes = _in_bytes(text, walk.nodes)
    return _thinned(JsonIndex(detect_style(text), nodes), step)


def _in_bytes(text: str, nodes: dict[str, Container]) -> dict[str, Container]:
    """The same containers with character positions turned into UTF-8 byte offsets."""
    if text.isascii():
        return nodes
    positions: set[int] = set()
    for node in nodes.values():
        positions.update((node.start, node.end))
        positions.update(offset for _, offset in node.marks)
        for _, start, end in node.members or ():
            positions.update((start, end))
    offsets: dict[int, int] = {}
    done = size = 0
    for position in sorted(positions):
        size += len(text[done:position].encode("utf-8"))
        offsets[position] = size
        done = position
    return {
        where: Container(
            offsets[n.start], offsets[n.end], n.count, n.is_array,
            tuple((i, offsets[o]) for i, o in n.marks),
            None if n.members is None
            else tuple((k, offsets[s], offsets[e]) for k, s, e in n.members))
        for where, n in nodes.items()
    }


def _thinned(index: JsonIndex, step: int) -> JsonIndex:
    """``index`` within :data:`MAX_INDEX_BYTES`: the step doubles until it fits."""
    nodes = index.nodes
    while sum(node.cost(where) for where, node in nodes.items()) > MAX_INDEX_BYTES:
        step *= 2
        kept: dict[str, Container] = {}
        for where, node in nodes.items():
            if where and node.end - node.start < step:
                continue
            marks: list[tuple[int, int]] = []
            for mark in node.marks:
                if not marks or mark[1] - marks[-1][1] >= step:
                    marks.append(mark)
            kept[where] = Container(node.start, node.end, node.count, node.is_array,
                                    tuple(marks), node.members)
        nodes = kept  # at worst the root alone, one mark and a short member list: it fits
    return JsonIndex(index.style, nodes)
