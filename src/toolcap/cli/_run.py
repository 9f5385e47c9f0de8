"""``toolcap run``: run a command as an agent's shell tool does, its output bounded.

stdout and stderr are captured together in arrival order, streamed through the
same cutter as ``toolcap cap`` (tool ``run``: ``[tools.run]`` configures it), and
followed by one line saying how the command ended. toolcap exits with the
command's exit code (128+N when signal N killed it).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from ..shell._run import DRAIN_SECONDS, KILL_GRACE_SECONDS, CommandNotStarted, run_command
from ._cap import build_stream, deliver
from ._common import CommandError, add_config_options

__all__ = ["STATUS_RESERVE", "register"]

#: Bytes kept free under the limit for the status line (and the line break before it),
#: so that output plus status line stay within the bound.
STATUS_RESERVE = 160


def register(subparsers: Any) -> None:
    """Add ``toolcap run`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a command, its output bounded",
        description="Run COMMAND with stdout and stderr captured together, in the order they "
        "were written, and write them bounded by the tool's policy, then a line with the exit "
        "status. toolcap exits with the command's exit code (128+N for signal N). What is cut "
        "is kept in the artifact store.",
        usage="%(prog)s [options] -- COMMAND [ARGS...]",
        epilog="The last line is '[exit status N]', '[killed by signal NAME (N); exit status "
        "128+N]', or after --timeout '[timed out after S, process group killed; ...]' (SIGTERM "
        f"to the group, SIGKILL {KILL_GRACE_SECONDS:g}s later; never exit 0 after a timeout). "
        "Ctrl-C and SIGTERM are passed on to the command's process group. Output that a "
        f"background process still holds open {DRAIN_SECONDS:g}s after the command exits is "
        "not waited for. The limit counts the status line too.",
    )
    parser.add_argument("--tool", default="run", metavar="NAME",
                        help="use this tool's policy from the configuration (default: run)")
    parser.add_argument("--limit", metavar="SIZE",
                        help="bound in bytes, e.g. 32KB or 'unlimited' (default: the tool's "
                        "size_threshold and the batch ceiling)")
    parser.add_argument("--timeout", type=_seconds, metavar="S",
                        help="kill the command and its process group after S seconds")
    parser.add_argument("--no-spill", action="store_true",
                        help="do not keep the full output in the artifact store")
    add_config_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                        help="the command and its arguments (after --)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the command, stream its output through the bound, report how it ended."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CommandError("no command given (toolcap run [options] -- COMMAND [ARGS...])")
    # Binary output is named even with no limit: it would reach the model garbled.
    policy, stream = build_stream(args, reserve=STATUS_RESERVE, name_binary=True)
    out = sys.stdout.buffer
    ends_with_newline = [True]

    def take(chunk: bytes) -> None:
        if not stream.passthrough:
            stream.write(chunk)
            # With no limit, the first bytes are held until they show text.
            chunk = stream.release()
        if chunk:
            out.write(chunk)
            out.flush()
            ends_with_newline[0] = chunk.endswith(b"\n")

    try:
        ended = run_command(command, take, timeout=args.timeout)
    except CommandNotStarted as error:
        stream.abort()
        raise CommandError(str(error.strerror), status=127) from None
    except BaseException:
        stream.abort()
        raise
    outcome = stream.close()
    if outcome.output:  # cut, or held until the end
        ends_with_newline[0] = outcome.output.endswith(b"\n")
    status = (b"" if ends_with_newline[0] else b"\n") + ended.line().encode("utf-8") + b"\n"
    deliver(outcome, policy, args.tool, out, trailer=status)
    return ended.status


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"the timeout must be a positive number, got {text!r}")
    return value
