"""``toolcap compact``: mask the older tool outputs of a saved session, keeping each original.

The library's compaction (:func:`toolcap.compact`: the same plan, measure and
placeholder) over a session file of any size: OpenAI Chat Completions, OpenAI
Responses or Anthropic Messages (JSON or JSON Lines), Claude Code transcripts and
Codex CLI rollouts. The file is read in three steps of bounded memory (see
:mod:`toolcap.sessions._compact`); every byte it does not change is written back
as it was. Without ``-o`` or ``--in-place`` nothing is written, not even to the store.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._finalize import Policy
from .._tokenizer import counter_name, measure_of, token_counter
from ..adapters._compactsettings import DEFAULT_KEEP_RECENT, DEFAULT_TRIGGER, compaction_settings
from ..core._errors import ConfigError, RepairError
from ..core._refs import reference_for
from ..core._sizes import human_size
from ..core._tokens import MEASURES, human_tokens
from ..protocols import TokenCounter
from ..sessions._compact import (
    Kept,
    Survey,
    compacted,
    keep_originals,
    plan,
    remeasured,
    survey,
)
from ._common import CommandError, add_config_options, load_cli_config
from ._files import add_rewrite_options, atomic_write, open_session, rewrite_in_place
from ._progress import progress

__all__ = ["register"]

_BUSY = ("was written to while it was being compacted; nothing was replaced: run compact "
         "again once the session is idle")


def register(subparsers: Any) -> None:
    """Add ``toolcap compact`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "compact",
        help="mask the older tool outputs of a saved session, keeping each original",
        description="Replace the oldest tool outputs of a saved session (OpenAI, Anthropic, "
        "Claude Code or Codex CLI) by a short placeholder naming the artifact that keeps "
        "the original, until the outputs together are within --target. Everything else "
        "stays byte for byte. Without -o or --in-place it only reports.",
    )
    parser.add_argument("session", metavar="SESSION", help="the session file")
    parser.add_argument("--target", metavar="SIZE",
                        help="mask the oldest outputs until all of them together measure "
                        "at most this (default: half the trigger)")
    parser.add_argument("--trigger", metavar="SIZE",
                        help="do nothing while the outputs measure at most this (default: "
                        f"the target if given, else {human_size(DEFAULT_TRIGGER['bytes'])})")
    parser.add_argument("--keep-recent", metavar="SIZE",
                        help="never mask the newest outputs that fit in this together "
                        f"(default: {human_size(DEFAULT_KEEP_RECENT['bytes'])})")
    parser.add_argument("--exclude-tool", metavar="NAME", action="append", default=[],
                        help="never mask this tool's outputs (repeatable)")
    parser.add_argument("--measure", choices=MEASURES, default="bytes",
                        help="what the outputs and the amounts are measured in: UTF-8 bytes "
                        "(default) or tokens (o200k_base with toolcap[tokens], else an "
                        "estimate; amounts such as '100k tokens')")
    add_rewrite_options(parser, "compacted")
    add_config_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Survey, plan, keep the originals, rewrite; print the timeline."""
    try:
        trigger = args.trigger if args.trigger is not None else args.target
        settings = compaction_settings(trigger, args.target, args.keep_recent, None,
                                       args.measure)
    except ConfigError as error:
        raise CommandError(str(error).replace("trigger", "--trigger").replace(
            "target", "--target")) from None
    counter = token_counter() if args.measure == "tokens" else None
    size_of = measure_of(args.measure, counter)
    writing = bool(args.output or args.in_place) and not args.dry_run
    with open_session(args, writing=writing) as session:
        stream, path, lines, read_as = session
        config = load_cli_config(args)
        keeper = _keeper(Policy(config, notices=False) if writing else None)
        steps = 2 if writing else 1
        with progress(read_as.size * steps, "reading") as bar:
            try:
                found = survey(stream, lines=lines, progress=bar.advance, measure=size_of,
                               tokens=counter is not None)
            except RepairError as error:
                raise CommandError(f"{path}: {error}") from None
            kept = Kept()
            while True:
                planned = plan(found, settings, exclude=set(args.exclude_tool),
                               unavailable=kept.failures)
                todo = [i for i in planned.mask if i not in kept.references]
                if not todo:
                    break
                bar.step("storing" if writing else "hashing")
                bar.more(_record_bytes(found, todo))
                keep_originals(stream, found, todo, keeper, kept, progress=bar.advance,
                               measure=size_of)
                remeasured(found, kept)  # the next plan sees the real placeholders
            masked = [i for i in planned.mask if i in kept.references]
            done = None
            if writing:
                bar.step("writing")
                data = compacted(stream, found, masked, kept, progress=bar.advance)
                if args.output:
                    atomic_write(Path(args.output), data, like=path)
                    done = f"wrote {args.output}"
                else:
                    done = rewrite_in_place(path, data, read_as, changed=bool(masked),
                                            busy=_BUSY)
    _timeline(found, masked, kept, planned.after, settings.trigger, settings.target,
              writing=writing, reason=planned.reason, counter=counter)
    if done:
        print(done, flush=True)
    if kept.failures:
        first = next(iter(kept.failures.values()))
        print(f"toolcap: not masked: {len(kept.failures)} tool output(s) whose original could "
              f"not be stored ({first}); left whole, nothing lost", file=sys.stderr)
        return 1
    return 0


def _keeper(policy: Policy | None) -> Any:
    if policy is None:  # reporting only: the reference a store would give, nothing stored
        return lambda data, tool: (reference_for(data), None)
    return lambda data, tool: policy.keep(data, tool=tool)


def _record_bytes(found: Survey, indices: list[int]) -> int:
    records = {found.outputs[i].place.offset: found.outputs[i].place.length for i in indices}
    return sum(records.values())


def _timeline(found: Survey, masked: list[int], kept: Kept, after: int, trigger: int,
              target: int, *, writing: bool, reason: str, counter: TokenCounter | None) -> None:
    out = sys.stdout
    shown = human_size if counter is None else human_tokens
    by = "" if counter is None else f", counted by {counter_name(counter)}"
    rows = [found.outputs[i] for i in masked]
    where_width = max((len(o.where) for o in rows), default=0)
    tool_width = max((len(found.tool(o)) for o in rows), default=0)
    for index, output in zip(masked, rows, strict=True):
        kept_as = kept.references[index] if writing else "(not written)"
        print(f"{output.where:<{where_width}}  {found.tool(output):<{tool_width}}  "
              f"{shown(output.size)} → {shown(output.placeholder)}  {kept_as}",
              file=out)
    if found.cut_short:
        print(f"{found.cut_short}", file=out)
    before = sum(o.size for o in found.outputs)
    formats = ", ".join(found.formats) or "no tool outputs found"
    kind = "JSON Lines" if found.lines else "JSON"
    verb = "compacted" if writing else "would compact"
    print(f"{verb} {len(masked)} of {len(found.outputs)} tool outputs: {shown(before)} → "
          f"{shown(after)} (trigger {shown(trigger)}, target {shown(target)}{by}; "
          f"{reason})  [{formats}; {kind}]", file=out)
    out.flush()

