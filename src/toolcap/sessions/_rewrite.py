"""Passes over a session file in bounded memory: read it, read some records back, rewrite.

:class:`Reading` reads every record once, parsed, and notes a last JSON Lines line
cut short (an agent stopped in the middle of writing it) instead of failing on
it. A :class:`Place` says where one tool output is (its record's offset and
length, and its position among the record's outputs), a few dozen bytes kept per
output between passes. :func:`records_at` reads back only the records of some
places; :func:`rewrite` copies the file through, replacing values in those
records only: every other byte is copied as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from ..core._jsonspans import Located
from ._records import PlacedError, Record, placed, read_records
from ._session import ParsedRecord, parse_record

__all__ = ["Edits", "Place", "Reading", "records_at", "rewrite", "splice", "splice_pieces"]

Progress = Callable[[int], None]
#: The new values of some located values of a record read back.
Edits = Callable[[ParsedRecord, list[int]], list[tuple[Located, str]]]

_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Place:
    """Where one tool output is: its record, and its position among the record's outputs."""

    offset: int
    length: int
    number: int
    position: int


class Reading:
    """The parsed records of a file, in order; a last line cut short is noted in
    :attr:`cut_short` and left out, any other unreadable record raises :class:`RepairError`."""

    def __init__(self, stream: BinaryIO, *, lines: bool, progress: Progress | None = None) -> None:
        self.stream = stream
        self.lines = lines
        self.progress = progress
        self.cut_short: str | None = None

    def __iter__(self) -> Iterator[ParsedRecord]:
        reached = 0
        records = read_records(self.stream, lines=self.lines)
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except PlacedError as error:
                raise placed(error, self.stream) from None
            try:
                parsed = parse_record(record, lines=self.lines)
            except PlacedError as error:
                if not (self.lines and not record.complete and not self.stream.read(1)):
                    raise placed(error, self.stream) from None
                self.cut_short = (f"{placed(error, self.stream)}: the last line, cut short (the "
                                  "agent stopped in the middle of writing it?); left as it is")
                return
            yield parsed
            if self.progress is not None:
                self.progress(record.end - reached)
                reached = record.end

    @staticmethod
    def place(parsed: ParsedRecord, position: int) -> Place:
        record = parsed.record
        return Place(record.offset, len(record.data), record.number, position)


def records_at(stream: BinaryIO, places: Sequence[Place], indices: Sequence[int], *,
               lines: bool) -> Iterator[tuple[ParsedRecord, list[int]]]:
    """Each record holding some of ``places[i]`` for ``i`` in ``indices`` (in file order),
    read back and parsed once, with those ``i``."""
    ordered = sorted(indices, key=lambda i: (places[i].offset, places[i].position))
    start = 0
    while start < len(ordered):
        first = places[ordered[start]]
        stop = start
        while stop < len(ordered) and places[ordered[stop]].offset == first.offset:
            stop += 1
        stream.seek(first.offset)
        record = Record(first.offset, stream.read(first.length), first.number)
        yield parse_record(record, lines=lines), ordered[start:stop]
        start = stop


def rewrite(stream: BinaryIO, places: Sequence[Place], indices: Sequence[int], edits: Edits,
            *, lines: bool, progress: Progress | None = None) -> Iterator[bytes]:
    """The file, in pieces, with each record of ``indices`` given ``edits``; every other
    byte as it was."""
    at = 0
    for parsed, group in records_at(stream, places, indices, lines=lines):
        record = parsed.record
        yield from _copy(stream, at, record.offset, progress)
        changes = edits(parsed, group)
        if changes:
            text = parsed.text
            for piece in splice_pieces(text, changes, ensure_ascii=text.isascii()):
                yield piece.encode("utf-8")
        else:
            yield record.data
        at = record.end
        if progress is not None:
            progress(len(record.data))
    yield from _copy(stream, at, None, progress)


def _copy(stream: BinaryIO, start: int, stop: int | None,
          progress: Progress | None) -> Iterator[bytes]:
    """The file's bytes from ``start`` to ``stop`` (the end if ``None``), in chunks."""
    at = start
    while stop is None or at < stop:
        stream.seek(at)  # reading a record back in between moved it
        chunk = stream.read(_COPY_CHUNK if stop is None else min(_COPY_CHUNK, stop - at))
        if not chunk:
            return
        yield chunk
        at += len(chunk)
        if progress is not None:
            progress(len(chunk))


def splice(text: str, edits: Sequence[tuple[Located, str]], *, ensure_ascii: bool) -> str:
    """``text`` with each located value replaced by a new string value.

    Only those values change; every other character stays where it was.
    """
    return "".join(splice_pieces(text, edits, ensure_ascii=ensure_ascii))


def splice_pieces(
    text: str, edits: Sequence[tuple[Located, str]], *, ensure_ascii: bool
) -> Iterator[str]:
    """:func:`splice` in pieces, in order, so that a large text need not be joined."""
    done = 0
    for old, new in sorted(edits, key=lambda edit: edit[0].start):
        if old.start < done:
            raise ValueError("overlapping edits")
        yield text[done : old.start]
        yield json.dumps(new, ensure_ascii=ensure_ascii)
        done = old.end
    yield text[done:]
