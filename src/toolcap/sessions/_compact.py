"""Compaction of a saved session file, in bounded memory: measure, keep, rewrite.

The rules are the library's (:func:`toolcap.core._compaction.plan_compaction`, the
placeholder and the measure of :mod:`toolcap.adapters._compactoutput`); what differs is
that the file is never held whole. Three steps over the file:

1. :func:`survey` reads every record once and keeps, per tool output, only what
   the planning needs (its size, its placeholder's size, its turn, its tool, where
   its record is): no content.
2. :func:`keep_originals` reads back only the records of the outputs to mask and
   stores their originals (and the long strings of their second copies); an
   output that cannot be stored is planned around (:func:`plan`'s ``unavailable``).
3. :func:`compacted` copies the file through, rewriting only those records: every
   other byte is copied as it was.

Memory is the largest record plus a few dozen bytes per tool output.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from ..adapters._compactoutput import content_size, original_of, placeholder_of
from ..adapters._compactsettings import CompactionSettings
from ..core._compaction import (
    SAMPLE_REFERENCE,
    Output,
    Plan,
    is_placeholder,
    plan_compaction,
    render_placeholder,
)
from ..core._jsonspans import Located
from ..core._utf8 import sanitize, utf8_size
from ._rewrite import Place, Reading, records_at, rewrite
from ._session import ParsedRecord

__all__ = [
    "Keeper", "Kept", "Measure", "Measured", "Survey", "compacted", "keep_originals", "plan",
    "remeasured", "survey",
]

Progress = Callable[[int], None]
#: What a text measures: UTF-8 bytes, or tokens (:func:`toolcap._tokenizer.measure_of`).
Measure = Callable[[str], int]
#: Stores bytes: ``(reference, None)`` or ``(None, why)`` (:meth:`toolcap.Policy.keep`).
Keeper = Callable[[bytes, str], tuple[str | None, str | None]]

@dataclass(frozen=True)
class Measured:
    """What the survey keeps of one tool output: no content."""

    where: str
    tool: str
    call_id: str | None
    place: Place
    size: int
    placeholder: int
    masked: bool
    turn: int


@dataclass
class Survey:
    """The tool outputs of a session file, oldest first, and how it is written."""

    lines: bool
    outputs: list[Measured] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    #: A last line cut short (an agent stopped mid-write): left as it is, and said.
    cut_short: str | None = None

    @property
    def places(self) -> list[Place]:
        return [output.place for output in self.outputs]

    def tool(self, output: Measured) -> str:
        """Its tool, named by its call wherever in the file the call is."""
        named = self.names.get(output.call_id) if output.call_id is not None else None
        return named or output.tool


def survey(stream: BinaryIO, *, lines: bool, progress: Progress | None = None,
           measure: Measure = utf8_size, tokens: bool = False) -> Survey:
    """Read the whole file once; keep the measure of each output (see the module):
    ``measure`` is UTF-8 bytes, or a token count (with ``tokens``, as
    :func:`toolcap.compact` counts)."""
    found = Survey(lines)
    turn, answered = 0, True
    reading = Reading(stream, lines=lines, progress=progress)
    for parsed in reading:
        found.names.update(parsed.calls)
        position = -1
        for event in parsed.events:
            if event is None:
                if answered:  # consecutive model records are one turn (Claude Code splits one)
                    turn, answered = turn + 1, False
                continue
            answered = True
            position += 1
            size = content_size(event.content, measure, tokens)
            if size is None:
                continue
            if event.format not in found.formats:
                found.formats.append(event.format)
            masked = is_placeholder(event.content)
            tool = found.names.get(event.call_id or "") or event.tool
            placeholder = 0 if masked else measure(
                placeholder_of(tool, event.content, SAMPLE_REFERENCE))
            found.outputs.append(Measured(event.where, event.tool, event.call_id,
                                          reading.place(parsed, position), size, placeholder,
                                          masked, turn))
    found.cut_short = reading.cut_short
    return found


def plan(found: Survey, settings: CompactionSettings, *, exclude: Collection[str],
         unavailable: Collection[int] = ()) -> Plan:
    """The library's plan over the survey; a saved session's latest turn is protected by
    ``keep_recent`` alone (its latest output may be the one that broke it)."""
    outputs = [Output(o.size, o.turn, o.placeholder, o.masked, found.tool(o) in exclude)
               for o in found.outputs]
    return plan_compaction(outputs, trigger=settings.trigger, target=settings.target,
                           keep_recent=settings.keep_recent, unavailable=frozenset(unavailable),
                           latest_turn=False)


@dataclass
class Kept:
    """The references of what :func:`keep_originals` stored, and what it could not."""

    references: dict[int, str] = field(default_factory=dict)
    #: The measure of each stored output's placeholder with its real reference.
    placeholders: dict[int, int] = field(default_factory=dict)
    copies: dict[tuple[int, int], str] = field(default_factory=dict)  # (offset, j) → reference
    failures: dict[int, str] = field(default_factory=dict)
    copy_failures: int = 0


def keep_originals(stream: BinaryIO, found: Survey, mask: Collection[int], keeper: Keeper,
                   kept: Kept, *, progress: Progress | None = None,
                   measure: Measure = utf8_size) -> None:
    """Store the originals of the outputs in ``mask`` not stored yet, into ``kept``, and
    measure their placeholders (in tokens, a reference's digits count otherwise than the
    sample's: :func:`remeasured` puts those measures into the survey)."""
    todo = [index for index in mask if index not in kept.references]
    for record, group in records_at(stream, found.places, todo, lines=found.lines):
        outputs = record.outputs
        for index in group:
            output = outputs[found.outputs[index].place.position]
            tool = found.tool(found.outputs[index])
            reference, why = keeper(original_of(output.content), tool)
            if reference is None:
                kept.failures[index] = why or "the store failed"
                continue
            kept.references[index] = reference
            kept.placeholders[index] = measure(placeholder_of(tool, output.content, reference))
            for j, copy in enumerate(output.copies):
                key = (record.record.offset, j)
                if key not in kept.copies:
                    reference, _ = keeper(sanitize(copy).encode("utf-8"), output.tool)
                    if reference is None:
                        kept.copy_failures += 1
                    else:
                        kept.copies[key] = reference
        if progress is not None:
            progress(len(record.record.data))


def remeasured(found: Survey, kept: Kept) -> bool:
    """Give the survey the placeholders' measures with their real references; whether
    any differs from the sample's (then the plan must be made again)."""
    changed = False
    for index, size in kept.placeholders.items():
        if found.outputs[index].placeholder != size:
            found.outputs[index] = replace(found.outputs[index], placeholder=size)
            changed = True
    return changed


def compacted(stream: BinaryIO, found: Survey, mask: Collection[int], kept: Kept, *,
              progress: Progress | None = None) -> Iterator[bytes]:
    """The file, in pieces, with the masked outputs (those stored) replaced by their
    placeholders; every other byte as it was."""

    def edits(parsed: ParsedRecord, group: list[int]) -> list[tuple[Located, str]]:
        outputs = parsed.outputs
        changes: list[tuple[Located, str]] = []
        copied: set[int] = set()  # the outputs of one record share its second copy
        for index in group:
            measured = found.outputs[index]
            output = outputs[measured.place.position]
            tool = found.tool(measured)
            changes.append((output.content, placeholder_of(tool, output.content,
                                                          kept.references[index])))
            for j, copy in enumerate(output.copies):
                reference = kept.copies.get((parsed.record.offset, j))
                if reference is not None and j not in copied:
                    copied.add(j)
                    changes.append((copy, render_placeholder(
                        tool=tool, size=utf8_size(copy), reference=reference, text=copy)))
        return changes

    done = [index for index in mask if index in kept.references]
    return rewrite(stream, found.places, done, edits, lines=found.lines, progress=progress)
