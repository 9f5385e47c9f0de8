"""``toolcap proxy``: put toolcap in front of any MCP server."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from ..core._headers import header_problem
from ..core._sizes import parse_limit
from ._common import CommandError, add_config_options, load_cli_config

__all__ = ["register"]

_EPILOG = """\
examples:
  toolcap proxy -- npx -y @modelcontextprotocol/server-filesystem /srv/data
  toolcap proxy --config toolcap.toml -- uvx mcp-server-git --repository .
  MCP_AUTH='Bearer TOKEN' toolcap proxy --url https://mcp.example.com/mcp \
      --header-env Authorization=MCP_AUTH
  toolcap proxy --listen 127.0.0.1:8931 -- uvx mcp-server-git --repository .
  TOKEN=... toolcap proxy --listen 0.0.0.0:8931 --auth-token-env TOKEN -- CMD
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
        help="HTTP header for --url (repeatable), e.g. 'X-Client: mine'; a secret here is "
        "seen by every local user in ps: give it with --header-env instead",
    )
    parser.add_argument(
        "--header-env",
        action="append",
        default=[],
        metavar="NAME=VAR",
        help="HTTP header for --url (repeatable) whose value is read from the environment "
        "variable VAR, e.g. Authorization=MCP_AUTH with MCP_AUTH='Bearer TOKEN': the value "
        "stays out of the command line",
    )
    serve = parser.add_argument_group("serving over HTTP")
    serve.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdin/stdout "
        "(HOST defaults to 127.0.0.1; a non-loopback HOST needs --auth-token-env)",
    )
    serve.add_argument(
        "--auth-token-env",
        metavar="NAME",
        help="require 'Authorization: Bearer TOKEN', TOKEN read from the environment variable NAME",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser Origin to accept besides loopback ones (repeatable), "
        "e.g. https://app.example.com",
    )
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=32,
        metavar="N",
        help="client sessions at once, each with its own upstream (default 32); "
        "past it, a new session is refused with HTTP 503",
    )
    serve.add_argument(
        "--session-idle-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="end a session (and its upstream) unused for this long (default 1800)",
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


def _headers(values: list[str], from_env: list[str]) -> dict[str, str]:
    """The headers of ``--header 'Name: value'`` and ``--header-env Name=VAR`` (the value of
    the environment variable VAR: a secret in an argument is visible to every local user
    in ``ps``, one in the environment only to its owner)."""
    headers: dict[str, str] = {}
    given: dict[str, str] = {}  # lower-cased name -> the option that gave it

    def add(name: str, value: str, option: str, where: str) -> None:
        if (problem := header_problem(name, value)) is not None:
            raise CommandError(f"{option} {where}: {problem}")
        if (first := given.get(name.lower())) is not None:
            raise CommandError(f"the header {name!r} is given twice ({first} and {option}; "
                               "header names are case-insensitive)")
        given[name.lower()] = option
        headers[name] = value

    for value in values:
        key, sep, rest = value.partition(":")
        if not sep or not key.strip():
            raise CommandError(f"--header must look like 'Name: value', got {value!r}")
        add(key.strip(), rest.strip(), "--header", key.strip())
    for value in from_env:
        # A header's name has neither '=' nor ':' (RFC 9110 token): the first '=' splits.
        key, sep, var = (part.strip() for part in value.partition("="))
        if not sep or not key or not var or ":" in key:
            raise CommandError(f"--header-env must look like 'Name=VARIABLE' (the header's "
                               f"value read from the environment variable), got {value!r}")
        found = os.environ.get(var)
        if found is None:
            raise CommandError(f"--header-env {value}: the environment variable {var} is not "
                               "set (set it to the header's value, e.g. 'Bearer TOKEN')")
        add(key, found.strip(), "--header-env", f"{value} (from {var})")
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
    for given, option in ((args.header, "--header"), (args.header_env, "--header-env")):
        if given and not args.url:
            raise CommandError(f"{option} applies to --url only")
    if args.timeout is not None and not args.url:
        raise CommandError("--timeout applies to --url only")
    if args.url:
        if not args.url.lower().startswith(("http://", "https://")):
            raise CommandError(f"--url must start with http:// or https://, got {args.url!r}")
        _require_http_extra()
    headers = _headers(args.header, args.header_env)
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

    from ..proxy._heap import keep_freed_memory

    # The command's own process: its allocator keeps what a big result frees for the
    # next one (a program that runs the proxy from the library decides for itself).
    keep_freed_memory()
    if args.listen is not None:
        options = _serve_options(args)
        from ..proxy import serve_proxy

        return serve_proxy(
            command, config, options, url=args.url, headers=headers, timeout=args.timeout,
            read_artifact_name=tool_name,
        )
    if args.auth_token_env or args.allow_origin:
        raise CommandError("--auth-token-env and --allow-origin apply to --listen only")

    from ..proxy import run_proxy  # the relay is loaded only for this command

    return run_proxy(command, config, url=args.url, headers=headers, timeout=args.timeout,
                     read_artifact_name=tool_name)


def _serve_options(args: argparse.Namespace) -> Any:
    """The checked options of ``--listen``."""
    from ..proxy._listen import ServeOptions, is_loopback, parse_listen

    try:
        host, port = parse_listen(args.listen)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    token: str | None = None
    if args.auth_token_env:
        token = os.environ.get(args.auth_token_env)
        if not token:
            raise CommandError(
                f"--auth-token-env {args.auth_token_env}: that environment variable is not set"
            )
    elif not is_loopback(host):
        raise CommandError(
            f"--listen {args.listen} accepts connections from other machines: "
            "give --auth-token-env NAME (clients then send 'Authorization: Bearer TOKEN')"
        )
    if args.max_sessions < 1:
        raise CommandError("--max-sessions must be at least 1")
    if not args.session_idle_timeout > 0:
        raise CommandError("--session-idle-timeout must be a positive number of seconds")
    return ServeOptions(
        host=host,
        port=port,
        auth_token=token,
        allowed_origins=frozenset(args.allow_origin),
        max_sessions=args.max_sessions,
        idle_timeout=args.session_idle_timeout,
    )
