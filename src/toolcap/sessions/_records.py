"""A session file as a stream of records, read in bounded memory.

A record is one JSON value of the file that holds messages or items: a line of
a JSON Lines file, or an element of the array of a single JSON document (the
top-level array, or the one under ``messages`` or ``input``). Only one record is
held at a time, so a 1 GB session is read with memory bound by its largest
record, not by the file. Records are given as byte ranges of the file: what
lies between them (newlines, commas, the document's frame) is copied as is.

For a single JSON document, the extent of each element is found by a byte
scanner that only tracks strings and brackets (regular expressions without
backtracking, resumable across reads); each element is then parsed on its own
by :func:`toolcap.core._jsonspans.parse_value`, which checks it. Pure of policy: it
reads, it does not decide.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ..core._errors import PlacedError, RepairError

__all__ = ["PlacedError", "Record", "detect_lines", "file_position", "placed", "read_records"]

_CHUNK = 1 << 20
# How much of the first line is read to tell JSON Lines from one JSON document.
_SNIFF = 1 << 16
_BOM = b"\xef\xbb\xbf"
_SPACE = b" \t\r\n"
# Outside a string: the next byte that matters. Inside: the run up to a quote or the
# end of the read (escapes taken whole). Both linear, neither backtracks.
_STRUCTURE = re.compile(rb'["\[\]{}]')
_STRING_RUN = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
_SCALAR = re.compile(rb"[^,\]}\s]*+")


def placed(error: PlacedError, stream: BinaryIO) -> RepairError:
    """``error`` with its place named by line (and column) and byte offset in ``stream``."""
    line, column = file_position(stream, error.offset)
    where = f"line {line}, column {column}" if error.column else f"line {line}"
    return RepairError(f"{where} (byte offset {error.offset}): {error.message}")


def file_position(stream: BinaryIO, offset: int) -> tuple[int, int]:
    """Line and column (both from 1; the column in characters) of byte ``offset``,
    read from the start of ``stream`` in chunks."""
    stream.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    line, column, at = 1, 0, 0
    while at < offset:
        chunk = stream.read(min(_CHUNK, offset - at))
        if not chunk:
            break
        at += len(chunk)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            line += chunk.count(b"\n")
            decoder.reset()
            column = len(decoder.decode(chunk[newline + 1 :]))
        else:
            column += len(decoder.decode(chunk))
    return line, column + 1


@dataclass(frozen=True)
class Record:
    """One record: the bytes ``data`` found at ``offset`` of the file; ``number`` is its
    line (JSON Lines) or its position in the array (a JSON document), from 1."""

    offset: int
    data: bytes
    number: int
    #: False for a last line with no line break after it: perhaps cut short.
    complete: bool = True

    @property
    def end(self) -> int:
        """The offset just after the record."""
        return self.offset + len(self.data)


def detect_lines(stream: BinaryIO) -> bool:
    """Whether the file reads as JSON Lines: its first line is a whole JSON value with
    more after it. Leaves the stream at its start."""
    stream.seek(0)
    head = stream.read(_SNIFF)
    stream.seek(0)
    text = head.removeprefix(_BOM).lstrip(_SPACE)
    if not text.startswith(b"{"):
        return False  # an array, or not JSON: read it as one document (the error names it)
    newline = text.find(b"\n")
    if newline < 0:
        return False
    rest = text[newline:].strip(_SPACE)
    if not rest:
        return False
    try:
        json.loads(text[:newline])
    except ValueError:
        return False
    return True


def read_records(stream: BinaryIO, *, lines: bool, chunk: int = _CHUNK) -> Iterator[Record]:
    """The records of the file, in order (a document read ``chunk`` bytes at a time).
    Raises :class:`RepairError` naming the place of a file that is not a session (a
    JSON document with no array of messages)."""
    stream.seek(0)
    return _lines(stream) if lines else _Document(stream, chunk).records()


def _lines(stream: BinaryIO) -> Iterator[Record]:
    offset, number = 0, 0
    while True:
        line = stream.readline()
        if not line:
            return
        number += 1
        start = offset
        offset += len(line)
        if number == 1 and line.startswith(_BOM):
            line, start = line[len(_BOM):], start + len(_BOM)
        body = line.rstrip(b"\r\n")
        if body.strip(_SPACE):
            yield Record(start, body, number, line.endswith(b"\n"))


class _Document:
    """The elements of the array of messages of one JSON document, read in chunks."""

    def __init__(self, stream: BinaryIO, chunk: int) -> None:
        self.stream = stream
        self.chunk = chunk
        self.buffer = bytearray()
        self.base = 0  # file offset of buffer[0]
        self.at = 0  # file offset reached
        self.mark: int | None = None  # the start of the value being read: kept

    # -- the buffer ----------------------------------------------------------------------

    def _more(self) -> bool:
        chunk = self.stream.read(self.chunk)
        if not chunk:
            return False
        drop = (self.at if self.mark is None else self.mark) - self.base
        if drop:
            del self.buffer[:drop]
            self.base += drop
        self.buffer += chunk
        return True

    def _byte(self) -> bytes:
        """The next byte that is not white space (consumed), or b"" at the end."""
        while True:
            local = self.at - self.base
            while local < len(self.buffer) and self.buffer[local] in _SPACE:
                local += 1
            self.at = self.base + local
            if local < len(self.buffer):
                self.at += 1
                return bytes(self.buffer[local : local + 1])
            if not self._more():
                return b""

    def _fail(self, message: str, offset: int) -> PlacedError:
        return PlacedError(message, offset)

    def _unexpected(self, message: str, found: bytes) -> PlacedError:
        """``message`` about the byte just read (``found``), or the end of the file."""
        if not found:
            return PlacedError(f"{message}, found the end of the text", self.at)
        return PlacedError(message, self.at - 1)

    # -- scanning --------------------------------------------------------------------------

    def _skip_string(self) -> None:
        """Past the string whose opening quote was just consumed."""
        start = self.at - 1
        while True:
            local = self.at - self.base
            run = _STRING_RUN.match(self.buffer, local)
            assert run is not None  # matches the empty string
            stop = run.end()
            if stop < len(self.buffer) and self.buffer[stop : stop + 1] == b'"':
                self.at = self.base + stop + 1
                return
            # The end of the read (or a backslash that ends it): resume there.
            self.at = self.base + stop
            if not self._more():
                raise self._fail("a string that does not end", start)

    def _skip_value(self, first: bytes) -> None:
        """Past the value whose first byte was just consumed."""
        if first == b'"':
            self._skip_string()
            return
        if first not in (b"[", b"{"):
            local = self.at - self.base
            while True:
                scalar = _SCALAR.match(self.buffer, local)
                assert scalar is not None
                if scalar.end() < len(self.buffer) or not self._more():
                    break
                local = self.at - self.base
            self.at = self.base + scalar.end()
            return
        depth = 1
        start = self.at - 1
        while depth:
            local = self.at - self.base
            found = _STRUCTURE.search(self.buffer, local)
            if found is None:
                self.at = self.base + len(self.buffer)
                if not self._more():
                    raise self._fail("the value that starts here does not end", start)
                continue
            self.at = self.base + found.end()
            char = found.group()
            if char == b'"':
                self._skip_string()
            elif char in (b"[", b"{"):
                depth += 1
            else:
                depth -= 1

    def _value_bytes(self, first: bytes) -> tuple[int, bytes]:
        start = self.mark = self.at - 1
        try:
            self._skip_value(first)
            return start, bytes(self.buffer[start - self.base : self.at - self.base])
        finally:
            self.mark = None

    # -- the document ----------------------------------------------------------------------

    def records(self) -> Iterator[Record]:
        first = self._byte()
        if not first:
            raise self._fail("expected a JSON value, found the end of the text", 0)
        if first == b"\xef":  # a byte order mark
            self.at += len(_BOM) - 1
            first = self._byte()
        if first == b"{":
            first = self._find_array()
        if first != b"[":
            raise self._fail(
                "not a conversation: expected an array of messages or items, or an object "
                "with 'messages' or 'input' (for JSON Lines, use --lines)", max(self.at - 1, 0))
        number = 0
        while True:
            first = self._byte()
            if first == b"]" and number == 0:
                break
            number += 1
            start, data = self._value_bytes(first)
            yield Record(start, data, number)
            after = self._byte()
            if after == b"]":
                break
            if after != b",":
                raise self._unexpected("expected ',' or ']' after an element", after)
        self._expect_end(closing=1 if self._in_object else 0)

    _in_object = False

    def _find_array(self) -> bytes:
        """In the top-level object, the first byte of the value of ``messages`` or ``input``."""
        self._in_object = True
        while True:
            quote = self._byte()
            if quote == b"}":
                break
            if quote != b'"':
                raise self._unexpected("expected a member name in double quotes", quote)
            _, key = self._value_bytes(quote)
            colon = self._byte()
            if colon != b":":
                raise self._unexpected("expected ':'", colon)
            first = self._byte()
            if key in (b'"messages"', b'"input"') and first == b"[":
                return first
            self._skip_value(first)
            after = self._byte()
            if after == b"}":
                break
            if after != b",":
                raise self._unexpected("expected ',' or '}'", after)
        return b""

    def _expect_end(self, *, closing: int) -> None:
        # The members after the array are skipped as values, the end checked.
        if closing:
            while True:
                after = self._byte()
                if after == b"}":
                    break
                if after != b",":
                    raise self._unexpected("expected ',' or '}'", after)
                quote = self._byte()
                if quote != b'"':
                    raise self._unexpected("expected a member name in double quotes", quote)
                self._skip_string()
                colon = self._byte()
                if colon != b":":
                    raise self._unexpected("expected ':'", colon)
                self._skip_value(self._byte())
        if self._byte():
            raise self._fail("unexpected text after the JSON value", self.at - 1)
