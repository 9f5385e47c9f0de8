"""``toolcap repair``: bound the oversized tool responses of a saved conversation.

A conversation that recorded one huge tool response fails on every later turn.
This finds every tool response over ``--over`` (OpenAI Chat Completions, OpenAI
Responses or Anthropic Messages, JSON or JSON Lines; Claude Code transcripts,
Codex CLI rollouts), bounds it with its tool's policy, keeps the original in the
artifact store, and leaves every other byte of the file as it was. The file is
read record by record, twice (find, then bound and write): memory is bounded by
its largest record, not by its size.

Each response over SIZE is cut to the lesser of SIZE and its tool's
``size_threshold``: what toolcap would have let through in the first place, and
never more than SIZE. Without ``-o`` or ``--in-place`` nothing is written (not
even to the store): the timeline says what would change.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._config import Config
from .._finalize import FinalizedResponse, Policy, ToolResponse
from ..core._errors import RepairError
from ..core._jsonspans import Located
from ..core._refs import reference_for
from ..core._sizes import human_size, parse_limit
from ..core._utf8 import utf8_size
from ..sessions._rewrite import Place, Reading, records_at, rewrite
from ..sessions._session import ParsedRecord
from ._common import CommandError, add_config_options, load_cli_config
from ._files import add_rewrite_options, atomic_write, open_session, rewrite_in_place
from ._progress import PROGRESS_MIN_BYTES, progress

__all__ = ["PROGRESS_MIN_BYTES", "register"]


def register(subparsers: Any) -> None:
    """Add ``toolcap repair`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "repair",
        help="bound the oversized tool responses of a saved conversation",
        description="Bound every tool response over SIZE in a saved conversation (OpenAI Chat "
        "Completions, OpenAI Responses or Anthropic Messages, JSON or JSON Lines; Claude Code "
        "and Codex CLI session files) to the lesser "
        "of SIZE and its tool's size_threshold, keeping the original in the artifact store. "
        "Everything else stays byte for byte. Without -o or --in-place it only reports.",
    )
    parser.add_argument("conversation", metavar="CONVERSATION", help="the conversation file")
    parser.add_argument("--over", required=True, metavar="SIZE",
                        help="bound the tool responses larger than this, e.g. 256KB")
    add_rewrite_options(parser, "repaired")
    parser.add_argument("--no-spill", action="store_true",
                        help="do not keep the originals in the artifact store")
    add_config_options(parser)
    parser.set_defaults(handler=run)


@dataclass(frozen=True)
class _Row:
    """What the timeline needs of a bounded response: sizes and references, not its text
    (a thousand bounded responses must not be held)."""

    original_bytes: int
    delivered_bytes: int
    artifacts: tuple[str, ...]
    not_kept: str | None


@dataclass(frozen=True)
class _Chosen:
    """A tool response over SIZE, as the first pass keeps it: no content."""

    where: str
    tool: str
    call_id: str | None
    place: Place


def run(args: argparse.Namespace) -> int:
    """Find, bound and (unless only reporting) write; print the timeline."""
    over = parse_limit(args.over, key="--over")
    if over is None:
        raise CommandError("--over needs a size such as 256KB")
    writing = bool(args.output or args.in_place) and not args.dry_run
    with contextlib.ExitStack() as stack:
        stream, path, lines, read_as = stack.enter_context(open_session(args, writing=writing))
        bar = stack.enter_context(progress(read_as.size * (2 if writing else 1), "reading"))
        reading = Reading(stream, lines=lines, progress=bar.advance)
        try:
            chosen, total, formats = _find(reading, over)
        except RepairError as error:
            raise CommandError(f"{path}: {error}") from None
        policy = _policy(load_cli_config(args), chosen, over,
                         store=writing and not args.no_spill, spill=not args.no_spill)
        rows: list[tuple[_Chosen, _Row]] = []

        keep = not args.no_spill  # a response whose original cannot be kept stays whole

        def bound(parsed: ParsedRecord, group: list[int]) -> list[tuple[Located, str]]:
            edits: list[tuple[Located, str]] = []
            copies: set[int] = set()  # the outputs of one record share its second copy
            for index in group:
                row = chosen[index]
                output = parsed.outputs[row.place.position]
                result = _bounded(policy, row.tool, row.call_id, output.parts, output.whole,
                                  edits, keep=keep)
                rows.append((row, _Row(result.original_bytes, result.delivered_bytes,
                                       tuple(result.artifacts or ()), result.not_kept)))
                if keep and not result.artifacts:
                    continue
                for j, copy in enumerate(output.copies):
                    if j not in copies and utf8_size(copy) > over:
                        copies.add(j)
                        _bounded(policy, row.tool, row.call_id, (copy,), True, edits, keep=keep)
            return edits

        places = [c.place for c in chosen]
        indices = range(len(chosen))
        done = None
        if writing:
            bar.step("writing")
            data = rewrite(stream, places, indices, bound, lines=lines,
                           progress=bar.advance)
            if args.output:
                atomic_write(Path(args.output), data, like=path)
                done = f"wrote {args.output}"
            else:
                done = rewrite_in_place(path, data, read_as, changed=bool(chosen), busy=_BUSY)
        else:
            for parsed, group in records_at(stream, places, indices, lines=lines):
                bound(parsed, group)
    _timeline(rows, total, formats, lines, over, writing=writing,
              spill=not args.no_spill, cut_short=reading.cut_short)
    if done:
        print(done, flush=True)
    lost = [result for _, result in rows if not args.no_spill and not result.artifacts]
    if lost:
        print(f"toolcap: not bounded: {len(lost)} tool response(s) whose original could not "
              f"be stored ({lost[0].not_kept or 'no artifact store'}); left whole, nothing lost",
              file=sys.stderr)
        return 1
    return 0


def _find(reading: Reading, over: int) -> tuple[list[_Chosen], int, list[str]]:
    """The first pass: where the responses over ``over`` are (each named by its call,
    wherever in the file the call is), how many responses there are, in which formats."""
    chosen: list[_Chosen] = []
    names: dict[str, str] = {}
    formats: dict[str, None] = {}
    total = 0
    for parsed in reading:
        names.update(parsed.calls)
        for position, output in enumerate(parsed.outputs):
            if not (output.whole or output.parts):
                continue
            total += 1
            formats[output.format] = None
            if output.size > over:
                chosen.append(_Chosen(output.where, output.tool, output.call_id,
                                      reading.place(parsed, position)))
    named = [replace(c, tool=names.get(c.call_id or "") or c.tool) for c in chosen]
    return named, total, list(formats)


def _bounded(policy: Policy, tool: str, call_id: str | None, parts: tuple[Located, ...],
             whole: bool, edits: list[tuple[Located, str]], *,
             keep: bool) -> FinalizedResponse:
    """Bound one response with its tool's policy; its new values go to ``edits`` (none
    when ``keep`` and its original could not be stored: nothing is lost)."""
    content: str | list[str] = str(parts[0]) if whole else [str(part) for part in parts]
    (result,) = policy.finalize([ToolResponse(tool, content, call_id)])
    if keep and not result.artifacts:
        return result
    # A part merged into another by a collapse is left empty: the saved
    # conversation keeps its shape, the text is in the artifact.
    aligned = result.aligned() if result.parts is not None else []
    for old, new in zip(parts, aligned, strict=True):
        new = "" if new is None else new
        if new != old:
            edits.append((old, new))
    return result


_BUSY = ("was written to while it was being repaired; nothing was replaced: run repair again "
         "once the conversation is idle")


def _policy(config: Config, chosen: list[_Chosen], over: int, *, store: bool,
            spill: bool) -> Policy:
    # One response at a time, to the lesser of SIZE and its tool's threshold.
    config = replace(config, batch_ceiling=None, notices=False)
    for name in sorted({output.tool for output in chosen}):
        threshold = config.for_tool(name).size_threshold
        config = config.with_tool(name,
                                size_threshold=over if threshold is None else min(over, threshold))
    if not spill:
        return Policy(config, sink=None)
    # Reporting only: compute the very cut a real run makes (its marker names the
    # reference), without storing anything.
    return Policy(config) if store else Policy(config, sink=_HashOnly())


class _HashOnly:
    """A sink that stores nothing and answers the reference a store would give."""

    def put(self, data: bytes, *, tool: str | None = None) -> str:
        return reference_for(data)


def _timeline(rows: list[tuple[_Chosen, _Row]], total: int, formats: list[str],
              lines: bool, over: int, *, writing: bool, spill: bool,
              cut_short: str | None) -> None:
    out = sys.stdout
    where_width = max((len(o.where) for o, _ in rows), default=0)
    tool_width = max((len(o.tool) for o, _ in rows), default=0)
    def delivered(result: _Row) -> int:
        left_whole = writing and spill and not result.artifacts
        return result.original_bytes if left_whole else result.delivered_bytes

    for output, result in rows:
        if not writing:
            kept = "(not written)"
        elif result.artifacts:
            kept = " ".join(result.artifacts)
        elif not spill:
            kept = "(original not kept: --no-spill)"
        else:
            kept = f"(left whole: original not kept: {result.not_kept or 'no artifact store'})"
        print(f"{output.where:<{where_width}}  {output.tool:<{tool_width}}  "
              f"{human_size(result.original_bytes)} → {human_size(delivered(result))}  "
              f"{kept}", file=out)
    if cut_short:
        print(cut_short, file=out)
    before = sum(result.original_bytes for _, result in rows)
    after = sum(delivered(result) for _, result in rows)
    shown = ", ".join(formats) or "no tool responses found"
    kind = "JSON Lines" if lines else "JSON"
    verb = "bounded" if writing else "would bound"
    print(f"{verb} {len(rows)} of {total} tool responses over "
          f"{human_size(over)}: {human_size(before)} → {human_size(after)}  "
          f"[{shown}; {kind}]", file=out)
    out.flush()
