"""``toolcap proxy``: put toolcap in front of any MCP server."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..core._sizes import parse_limit
from ._common import CommandError, add_config_options, load_cli_config

__all__ = ["register"]

_EPILOG = """\
examples:
  toolcap proxy -- npx -y @modelcontextprotocol/server-filesystem /srv/data
  toolcap proxy --config toolcap.toml -- uvx mcp-server-git --repository .
  toolcap proxy --url https://mcp.example.com/mcp --header 'Authorization: Bearer TOKEN'
"""


def register(subparsers: Any) -> None:
    """Add ``toolcap proxy`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "proxy",
        help="bound every result of an MCP server",
        description="Serve MCP on stdin/stdout and relay it to an upstream MCP server (the "
        "COMMAND after --, or --url), bounding every tool and resource result. What is cut "
        "is kept in the artifact store; the added read_artifact tool reads it back.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_options(parser)
    name = parser.add_mutually_exclusive_group()
    name.add_argument(
        "--read-artifact-tool",
        metavar="NAME",
        help="name of the added tool that reads kept output back (default: read_artifact)",
    )
    name.add_argument(
        "--no-read-artifact", action="store_true", help="do not add the read_artifact tool"
    )
    parser.add_argument(
        "--url", metavar="URL", help="reach the upstream server over Streamable HTTP at URL"
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="HTTP header for --url (repeatable), e.g. 'Authorization: Bearer TOKEN'",
    )
    parser.add_argument(
        "--max-line-size",
        metavar="SIZE",
        help="longest message read from the upstream server (default: max_line_size of the "
        "configuration, 256MB); a longer one is streamed to the artifact store, never held "
        "in memory, and its call gets a note naming it instead",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="for --url: how long to wait to connect and for each answer's next bytes "
        "(default: 30 to connect, 300 between bytes)",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND [ARGS...]",
        help="the upstream server's command line",
    )
    parser.set_defaults(handler=run)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"--timeout must be a positive number of seconds, "
                                         f"got {value!r}")
    return seconds


def _require_http_extra() -> None:
    """A one-line error, not a traceback, when the MCP SDK is not installed."""
    try:
        import httpx2  # noqa: F401
        import mcp.client.streamable_http  # noqa: F401
    except ImportError as exc:
        raise CommandError(
            f"--url needs the MCP SDK ({exc.name or 'mcp'} is not installed): "
            "pip install 'toolcap[mcp]' (from a clone: pip install '.[mcp]')"
        ) from None


def _headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition(":")
        if not sep or not key.strip():
            raise CommandError(f"--header must look like 'Name: value', got {value!r}")
        headers[key.strip()] = rest.strip()
    return headers


def run(args: argparse.Namespace) -> int:
    """Check the arguments, load the configuration and relay until either side ends."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.url and command:
        raise CommandError("give either --url or a command after --, not both")
    if not args.url and not command:
        raise CommandError("no upstream server: give its command after --, or --url URL")
    if args.header and not args.url:
        raise CommandError("--header applies to --url only")
    if args.timeout is not None and not args.url:
        raise CommandError("--timeout applies to --url only")
    if args.url:
        if not args.url.lower().startswith(("http://", "https://")):
            raise CommandError(f"--url must start with http:// or https://, got {args.url!r}")
        _require_http_extra()
    headers = _headers(args.header)
    config = load_cli_config(args)
    if args.max_line_size:
        limit = parse_limit(args.max_line_size, key="--max-line-size")
        config = dataclasses.replace(config, max_line_size=limit)
    if args.no_read_artifact:
        tool_name: str | None = None
    elif args.read_artifact_tool:
        tool_name = args.read_artifact_tool
    else:
        tool_name = config.read_artifact_tool

    from ..proxy import run_proxy  # the relay is loaded only for this command

    return run_proxy(command, config, url=args.url, headers=headers, timeout=args.timeout,
                     read_artifact_name=tool_name)
