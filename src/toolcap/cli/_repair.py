"""``toolcap repair``: bound the oversized tool responses of a saved conversation.

A conversation that recorded one huge tool response fails on every later turn.
This finds every tool response over ``--over`` (OpenAI Chat Completions, OpenAI
Responses or Anthropic Messages; JSON or JSON Lines), bounds it with its tool's
policy, keeps the original in the artifact store, and leaves every other byte of
the file as it was.

Each response over SIZE is cut to the lesser of SIZE and its tool's
``size_threshold``: what toolcap would have let through in the first place, and
never more than SIZE. Without ``-o`` or ``--in-place`` nothing is written (not
even to the store): the timeline says what would change.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._config import Config
from .._finalize import FinalizedResponse, Policy, ToolResponse
from ..core._refs import reference_for
from ..core._sizes import human_size, parse_limit
from ..sessions._jsonspan import Located
from ..sessions._repair import (
    Conversation,
    RepairError,
    ToolOutput,
    read_conversation,
    splice_pieces,
)
from ._common import CommandError, add_config_options, load_cli_config
from ._files import (
    add_rewrite_options,
    atomic_write,
    read_bytes,
    rewrite_in_place,
    same_file,
    state_of,
)
from ._progress import PROGRESS_MIN_BYTES, progress

__all__ = ["PROGRESS_MIN_BYTES", "register"]

def register(subparsers: Any) -> None:
    """Add ``toolcap repair`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "repair",
        help="bound the oversized tool responses of a saved conversation",
        description="Bound every tool response over SIZE in a saved conversation (OpenAI Chat "
        "Completions, OpenAI Responses or Anthropic Messages; JSON or JSON Lines) to the lesser "
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


def run(args: argparse.Namespace) -> int:
    """Find, bound and (unless only reporting) write; print the timeline."""
    over = parse_limit(args.over, key="--over")
    if over is None:
        raise CommandError("--over needs a size such as 256KB")
    path = Path(args.conversation)
    if args.output and same_file(path, Path(args.output)):
        raise CommandError("-o names the input file: use --in-place (it keeps a backup)")
    if args.output and not args.dry_run:
        # Fail before anything is stored, not after.
        folder = Path(args.output).parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise CommandError(f"cannot write in {folder}: not a writable directory")
    if args.in_place:
        path = path.resolve()  # through a symbolic link: repair the file it names
    lines = args.lines
    if lines is None and path.suffix.lower() in (".jsonl", ".ndjson"):
        lines = True
    # Taken before the read: a write from now on shows in the state compared before
    # the file is replaced.
    read_as = state_of(path)
    with _progress(read_as.size) as advance:
        try:
            # The bytes are not kept: the text holds the same, and big files are big.
            conversation = read_conversation(read_bytes(path), lines=lines, progress=advance)
        except RepairError as error:
            raise CommandError(f"{path}: {error}") from None
    writing = bool(args.output or args.in_place) and not args.dry_run
    chosen = [o for o in conversation.outputs if o.size > over]
    policy = _policy(load_cli_config(args), chosen, over, store=writing and not args.no_spill,
                     spill=not args.no_spill)
    edits: list[tuple[Located, str]] = []
    rows: list[tuple[ToolOutput, FinalizedResponse]] = []
    for output in chosen:
        content: str | list[str] = str(output.parts[0]) if output.whole else [
            str(part) for part in output.parts]
        (result,) = policy.finalize([ToolResponse(output.tool, content, output.call_id)])
        rows.append((output, result))
        # A part merged into another by a collapse is left empty: the saved
        # conversation keeps its shape, the text is in the artifact.
        aligned = result.aligned() if result.parts is not None else []
        for old, new in zip(output.parts, aligned, strict=True):
            new = "" if new is None else new
            if new != old:
                edits.append((old, new))
    done = None
    if writing:
        pieces = splice_pieces(conversation.text, edits, ensure_ascii=conversation.ascii)
        data_out = (piece.encode("utf-8") for piece in pieces)
        if args.output:
            atomic_write(Path(args.output), data_out, like=path)
            done = f"wrote {args.output}"
        else:
            done = rewrite_in_place(path, data_out, read_as, changed=bool(edits), busy=_BUSY)
    _timeline(conversation, rows, over, writing=writing, spill=not args.no_spill)
    if done:
        print(done, flush=True)
    return 0


_BUSY = ("was written to while it was being repaired; nothing was replaced: run repair again "
         "once the conversation is idle")


def _policy(config: Config, chosen: list[ToolOutput], over: int, *, store: bool,
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


def _timeline(conversation: Conversation, rows: list[tuple[ToolOutput, FinalizedResponse]],
              over: int, *, writing: bool, spill: bool) -> None:
    out = sys.stdout
    where_width = max((len(o.where) for o, _ in rows), default=0)
    tool_width = max((len(o.tool) for o, _ in rows), default=0)
    for output, result in rows:
        if not writing:
            kept = "(not written)"
        elif result.artifacts:
            kept = " ".join(result.artifacts)
        elif not spill:
            kept = "(original not kept: --no-spill)"
        else:
            kept = f"(original not kept: {result.not_kept or 'no artifact store'})"
        print(f"{output.where:<{where_width}}  {output.tool:<{tool_width}}  "
              f"{human_size(result.original_bytes)} → {human_size(result.delivered_bytes)}  "
              f"{kept}", file=out)
    before = sum(result.original_bytes for _, result in rows)
    after = sum(result.delivered_bytes for _, result in rows)
    formats = ", ".join(conversation.formats) or "no tool responses found"
    kind = "JSON Lines" if conversation.lines else "JSON"
    verb = "bounded" if writing else "would bound"
    print(f"{verb} {len(rows)} of {len(conversation.outputs)} tool responses over "
          f"{human_size(over)}: {human_size(before)} → {human_size(after)}  "
          f"[{formats}; {kind}]", file=out)
    out.flush()


@contextlib.contextmanager
def _progress(size: int) -> Iterator[Callable[[int], None] | None]:
    """Reports of the character index reached, as bytes done on the progress bar."""
    with progress(size, "reading") as bar:
        done = [0]

        def advance(index: int) -> None:
            # Character index ~ byte offset: close enough for a progress bar.
            step = min(index, size) - done[0]
            if step > 0:
                bar.advance(step)
                done[0] += step

        yield advance
