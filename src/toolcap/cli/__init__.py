"""The ``toolcap`` command: one module per subcommand, each with ``register``."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..core._errors import ConfigError, StoreError
from ._common import CommandError

__all__ = ["main"]

# Each module exposes register(subparsers), which adds its parser and sets `handler`.
_SUBCOMMANDS = ("_cap", "_proxy", "_wrap", "_artifacts", "_run", "_repair", "_compact",
               "_config",)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line: ``toolcap: error: …`` and exit 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("toolcap").strip()
        dashed = re.fullmatch(r"argument (--[\w-]+)(?:/-\w)?: expected one argument", message)
        if dashed:  # `--limit -5KB`: argparse takes a value starting with '-' for an option
            option = dashed[1]
            message = (f"{option} needs a value; write one starting with '-' as {option}=VALUE"
                       " (sizes and counts cannot be negative)")
        where = f"{command}: " if command else ""
        self.exit(2, f"toolcap: error: {where}{message} (see '{self.prog} --help')\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered (``only``: just that one)."""
    parser = _Parser(
        prog="toolcap",
        description="Bound what a tool call can put into an LLM conversation, and keep what "
        "was cut.",
    )
    parser.add_argument("--version", action="version", version=f"toolcap {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in _SUBCOMMANDS:
        if only is None or name == f"_{only}":
            importlib.import_module(f"{__name__}.{name}").register(subparsers)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names, if it is one (the first word not an option)."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word is not None and f"_{word}" in _SUBCOMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for usage and configuration errors)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # Only the named subcommand's modules are imported: a short command starts sooner.
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    if sys.stdout is None:  # started with standard output closed (`toolcap … >&-`)
        _error("standard output is closed")
        return 2
    try:
        status: int = args.handler(args)
    except (ConfigError, CommandError) as error:
        _error(str(error))
        return getattr(error, "status", 2)
    except StoreError as error:
        _error(str(error))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`toolcap cap big.log | head`): not an error of ours.
        _silence_stdout()
        return 0
    return status


def _error(message: str) -> None:
    print(f"toolcap: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
