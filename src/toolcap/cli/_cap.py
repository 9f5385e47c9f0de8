"""``toolcap cap``: bound a file or standard input to a tool's limit."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from .._config import Config
from .._cut import STRATEGIES, check_head_ratio
from .._finalize import ToolResponse
from .._sizes import parse_limit
from ._common import (
    CommandError,
    add_config_options,
    load_cli_config,
    policy_from,
    tool_overrides,
)

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``toolcap cap`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "cap",
        help="bound a file or standard input",
        description="Write FILE (or standard input) to standard output, bounded by the tool's "
        "policy. What is cut is kept in the artifact store and the marker names it.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE", help="input file (default: stdin)")
    parser.add_argument("--limit", metavar="SIZE",
                        help="bound in bytes, e.g. 32KB, 1.5MB or 'unlimited' "
                        "(default: the tool's size_threshold)")
    parser.add_argument("--strategy", choices=STRATEGIES,
                        help="what to keep (default: the tool's, head_tail)")
    parser.add_argument("--head-ratio", type=float, metavar="R",
                        help="share of the budget for the head with head_tail (default 0.2)")
    parser.add_argument("--tool", default="cap", metavar="NAME",
                        help="use this tool's policy from the configuration (default: the "
                        "[tools.\"*\"] defaults, or [tools.cap])")
    parser.add_argument("--no-spill", action="store_true",
                        help="do not keep the full output in the artifact store")
    add_config_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read the input, finalize it as a batch of one, write the bounded text."""
    if args.head_ratio is not None:
        check_head_ratio(args.head_ratio, key="--head-ratio")
    config = load_cli_config(args)
    config = tool_overrides(config, args.tool, strategy=args.strategy, head_ratio=args.head_ratio)
    if args.limit is not None:
        # An explicit --limit is the bound; the batch ceiling is for batches of many.
        limit = parse_limit(args.limit, key="--limit")
        config = replace(tool_overrides(config, args.tool), batch_ceiling=None)
        config = _set_threshold(config, args.tool, limit)
    data = _read(args.file)
    policy = policy_from(config, spill=not args.no_spill)
    (result,) = policy.finalize([ToolResponse(args.tool, data)])
    out = sys.stdout.buffer
    out.write(data if not result.truncated else (result.text or "").encode("utf-8"))
    out.flush()
    return 0


def _set_threshold(config: Config, tool: str, limit: int | None) -> Config:
    tools = dict(config.tools)
    tools[tool] = {**tools.get(tool, {}), "size_threshold": limit}
    return replace(config, tools=tools)


def _read(path: str | None) -> bytes:
    if path is None or path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from None
