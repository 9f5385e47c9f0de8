"""``toolcap cap``: bound a file or standard input to a tool's limit, in constant memory.

The input is read in chunks and cut as it streams (see :mod:`toolcap.shell._stream`):
what comes out is what the finalizer gives for the same bytes, and an input that
fits is written through byte for byte.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Any

from .._finalize import Policy
from .._notice import emit_notice
from .._pipes import widen_pipe
from .._wire import Source, fit_wire
from ..core._cut import STRATEGIES, CapResult, check_head_ratio
from ..core._json import dumps
from ..core._sizes import parse_limit
from ..core._utf8 import decode, utf8_size
from ..shell._capstream import CapStream, StreamOutcome
from ..shell._spill import open_stream
from ._common import (
    CommandError,
    add_config_options,
    load_cli_config,
    policy_from,
)

__all__ = ["CHUNK", "build_stream", "deliver", "register"]

#: Read size; standard input's pipe is widened to it (where the system allows), so that
#: each read takes up to 1 MiB: fewer reads and fewer turns between writer and reader.
CHUNK = 1 << 20


def register(subparsers: Any) -> None:
    """Add ``toolcap cap`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "cap",
        help="bound a file or standard input",
        description="Write FILE (or standard input) to standard output, bounded by the tool's "
        "policy. The input streams through in constant memory; what is cut is kept in the "
        "artifact store and the marker names it.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE", help="input file (default: stdin)")
    parser.add_argument("--limit", metavar="SIZE",
                        help="bound in bytes, e.g. 32KB, 1.5MB or 'unlimited' "
                        "(default: the tool's size_threshold and the batch ceiling)")
    parser.add_argument("--strategy", choices=STRATEGIES,
                        help="what to keep (default: the tool's, head_tail)")
    parser.add_argument("--head-ratio", type=float, metavar="R",
                        help="share of the budget for the head with head_tail (default 0.2)")
    parser.add_argument("--tool", default="cap", metavar="NAME",
                        help="use this tool's policy from the configuration (default: the "
                        "[tools.\"*\"] defaults, or [tools.cap])")
    parser.add_argument("--no-spill", action="store_true",
                        help="do not keep the full output in the artifact store")
    parser.add_argument("--json", action="store_true",
                        help="write one JSON document (text, sizes, cap, artifacts) whose text "
                        "field also fits the wire_budget once serialized")
    add_config_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Stream the input through the tool's bound to standard output."""
    policy, stream = build_stream(args)
    source = _open(args.file)
    out = sys.stdout.buffer
    try:
        while chunk := _read(source, args.file):
            if stream.passthrough and not args.json:
                out.write(chunk)
            else:
                stream.write(chunk)
    except BaseException:
        stream.abort()
        raise
    finally:
        source.close()
    outcome = stream.close()
    if args.json:
        out.write(_json_document(outcome, policy, args.tool, stream))
        out.flush()
        line = outcome.notice(args.tool)
        if line is not None:
            emit_notice(line, to_stderr=policy.notices)
    else:
        deliver(outcome, policy, args.tool, out)
    return 0


def _json_document(outcome: StreamOutcome, policy: Policy, tool: str, stream: CapStream) -> bytes:
    """The outcome as one JSON line; its text field fits the wire budget once serialized."""
    text = decode(outcome.output)
    wire_budget = policy.config.wire_budget
    sent, reference = text, outcome.reference
    if wire_budget is not None:
        # A stream that fit was held whole: then it is the original the step keeps.
        sources: list[Source] | None = None
        if outcome.truncated and outcome.capped_by != "binary":
            # Cut again from the stream (its held head and tail), not from the cut.
            def recut(limit: int, wire: bool, ref: str | None) -> CapResult | None:
                return None if wire else stream.cutter.recut(limit, ref)

            sources = [recut]
        fit = fit_wire(policy, tool, text, wire_budget,
                       whole=None if outcome.truncated else outcome.output,
                       known=[reference] if reference else [],
                       original_bytes=outcome.original_bytes, sources=sources)
        (sent,) = fit.texts
        reference = fit.reference if fit.changed else reference
    artifacts: list[str] | None = None
    if outcome.truncated or sent is not text:
        artifacts = [reference] if reference else []
    document = {
        "tool": tool,
        "text": sent,
        "truncated": outcome.truncated or sent is not text,
        "capped_by": outcome.capped_by or ("wire_budget" if sent is not text else None),
        "original_bytes": outcome.original_bytes,
        "delivered_bytes": utf8_size(sent),
        "artifacts": artifacts,
    }
    return (dumps(document) + "\n").encode("utf-8")


def build_stream(
    args: argparse.Namespace, *, reserve: int = 0, name_binary: bool = False
) -> tuple[Policy, CapStream]:
    """The policy and the stream cutter the options of ``cap`` or ``run`` ask for.

    An explicit ``--limit`` is the bound (the batch ceiling is for batches of many);
    otherwise the tool's ``size_threshold`` and the batch ceiling both apply.
    ``reserve`` bytes are kept free under each limit for a line the caller appends.
    ``name_binary``: name binary input even with no limit (``run``'s output is
    always the conversation's; ``cap --limit unlimited`` passes bytes unchanged).
    """
    if getattr(args, "head_ratio", None) is not None:
        check_head_ratio(args.head_ratio, key="--head-ratio")
    config = load_cli_config(args)
    config = config.with_tool(args.tool, strategy=getattr(args, "strategy", None),
                            head_ratio=getattr(args, "head_ratio", None))
    policy = policy_from(config, spill=not args.no_spill)
    if args.limit is not None:
        threshold = parse_limit(args.limit, key="--limit")
        ceiling = None
    else:
        threshold = policy.for_tool(args.tool).size_threshold
        ceiling = config.batch_ceiling
    if getattr(args, "json", False) and threshold is None and ceiling is None:
        # No text bound at all: the wire budget bounds the document, so hold no more.
        threshold = config.wire_budget
    stream = open_stream(policy, args.tool, threshold=_less(threshold, reserve),
                         ceiling=_less(ceiling, reserve), spill=not args.no_spill,
                         name_binary=name_binary)
    return policy, stream


def deliver(
    outcome: StreamOutcome, policy: Policy, tool: str, out: IO[bytes], *, trailer: bytes = b""
) -> None:
    """Write what a stream became (then ``trailer``), and the notice when a cap changed it."""
    out.write(outcome.output)
    if trailer:
        out.write(trailer)
    out.flush()
    line = outcome.notice(tool)
    if line is not None:
        emit_notice(line, to_stderr=policy.notices)


def _less(limit: int | None, reserve: int) -> int | None:
    return None if limit is None else max(1, limit - reserve)


def _read(source: IO[bytes], path: str | None) -> bytes:
    try:
        return source.read(CHUNK)
    except OSError as error:
        where = "standard input" if path in (None, "-") else path
        raise CommandError(f"cannot read {where}: {error.strerror or error}") from None


def _open(path: str | None) -> IO[bytes]:
    if path is None or path == "-":
        # Unbuffered: each read returns what the pipe has, with no extra copy.
        source = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
        widen_pipe(source.fileno(), CHUNK)
        return source
    try:
        return open(path, "rb", buffering=0)
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None
