"""``toolcap wrap``: put ``toolcap proxy`` in front of every server of an MCP client's config.

Only the text of each wrapped entry changes (``core._clientconfig``); the file is
replaced atomically, after a backup. The exact text of each original entry is
kept in ``FILE.toolcap.json`` beside it (not in the file: a client that checks
its schema may refuse a key it does not know), and ``--undo`` puts that text
back, so an unwrapped entry is byte for byte what it was.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from ..core._clientconfig import Change, unwrap_text, wrap_text
from ..core._errors import ConfigError
from ._common import CommandError
from ._files import atomic_write, read_bytes, rewrite_in_place, state_of

__all__ = ["records_path", "register"]

_EPILOG = """\
examples:
  toolcap wrap ~/Library/Application\\ Support/Claude/claude_desktop_config.json --dry-run
  toolcap wrap .mcp.json
  toolcap wrap .vscode/mcp.json --server github
  toolcap wrap ~/.cursor/mcp.json --undo
"""

_RECORDS_FORMAT = "toolcap-wrap/1"
_BUSY = "was written to while it was being wrapped; nothing was replaced: try again"


def register(subparsers: Any) -> None:
    """Add ``toolcap wrap`` to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "wrap",
        help="route an MCP client's servers through toolcap proxy",
        description="Rewrite an MCP client's configuration (Claude Desktop, Claude Code, "
        "Cursor, VS Code, Windsurf, Gemini CLI) so that each server starts through "
        "'toolcap proxy'. Only the wrapped entries change; the file is replaced atomically "
        "after a backup (FILE.bak), and the original entries are kept in FILE.toolcap.json "
        "for --undo.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config_file", metavar="CONFIG_FILE", help="the client's MCP config")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the change as a unified diff and write nothing")
    parser.add_argument("--undo", action="store_true",
                        help="put back the original entries of wrapped servers")
    parser.add_argument("--server", action="append", default=[], metavar="NAME",
                        help="only this server (repeatable; default: every server)")
    parser.add_argument("--toolcap", metavar="PATH",
                        help="the toolcap executable the client starts (default: this one)")
    parser.set_defaults(handler=run)


def records_path(config: Path) -> Path:
    """Where the original entries of ``config`` are kept."""
    return config.with_name(config.name + ".toolcap.json")


def _toolcap_executable(given: str | None) -> str:
    """An absolute path: a GUI client does not see a virtual environment's PATH."""
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise CommandError(f"--toolcap {given}: no such file")
        return str(path.absolute())
    name = "toolcap.exe" if os.name == "nt" else "toolcap"
    for candidate in (Path(sys.executable).parent / name, Path(sys.argv[0])):
        if candidate.name == name and candidate.is_file():
            return str(candidate.absolute())
    found = shutil.which(name)
    if found is None:
        raise CommandError("cannot find the toolcap executable: give its path with --toolcap")
    return str(Path(found).absolute())


def _load_records(path: Path) -> tuple[dict[str, dict[str, str]], bytes | None]:
    """The original entries kept in ``path``, and its bytes (None: there is no such file)."""
    try:
        kept = path.read_bytes()
        data = json.loads(kept.decode("utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as error:
        raise CommandError(f"{path}: cannot read the original entries ({error})") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or data.get("format") != _RECORDS_FORMAT:
        raise CommandError(f"{path}: not a toolcap wrap record ({_RECORDS_FORMAT})")
    return entries, kept


def _save_records(path: Path, entries: dict[str, dict[str, str]], like: Path) -> None:
    if not entries:
        path.unlink(missing_ok=True)
        return
    data = {"format": _RECORDS_FORMAT, "entries": entries}
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    atomic_write(path, [text.encode("utf-8")], like=like)


def _put_back_records(path: Path, kept: bytes | None, like: Path) -> str:
    """Put the records file back as it was before this run (``kept``: its bytes, None:
    there was none); what could not be put back, to add to the error."""
    try:
        if kept is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write(path, [kept], like=like)
    except (OSError, CommandError) as error:
        return f"; {path} could not be put back as it was ({error}): remove or restore it"
    return ""


_NAMES_SHOWN = 10  # a ~/.claude.json can hold hundreds of servers


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMES_SHOWN])
    more = len(names) - _NAMES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _summary(change: Change, undo: bool) -> None:
    verb, same = ("restored", "not wrapped") if undo else ("wrapped", "already wrapped")
    if change.done:
        print(f"toolcap wrap: {verb}: {_names(change.done)}", file=sys.stderr)
    if change.unchanged:
        print(f"toolcap wrap: {same}: {_names(change.unchanged)}", file=sys.stderr)
    for name, why in change.skipped[:_NAMES_SHOWN]:
        print(f"toolcap wrap: skipped {name}: {why}", file=sys.stderr)
    if len(change.skipped) > _NAMES_SHOWN:
        print(f"toolcap wrap: skipped {len(change.skipped) - _NAMES_SHOWN} more",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Wrap (or unwrap) the servers of CONFIG_FILE; print what changed."""
    path = Path(args.config_file).expanduser()
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    path = path.resolve()  # through a symbolic link: rewrite the file it names
    read_as = state_of(path)
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not UTF-8 text, so not an MCP client config") from None
    records_file = records_path(path)
    records, kept = _load_records(records_file)
    names = set(args.server)
    try:
        if args.undo:
            change = unwrap_text(text, str(path), records, names=names)
        else:
            toolcap = _toolcap_executable(args.toolcap)
            change = wrap_text(text, str(path), toolcap, names=names,
                               gemini=path.name == "settings.json")
    except ConfigError as error:
        raise CommandError(str(error)) from None
    if change.text == text:
        _summary(change, args.undo)
        print(f"toolcap wrap: {path} unchanged", file=sys.stderr)
        return 0
    if args.dry_run:
        _summary(change, args.undo)
        diff = difflib.unified_diff(text.splitlines(keepends=True),
                                    change.text.splitlines(keepends=True),
                                    fromfile=str(path),
                                    tofile=f"{path} ({'restored' if args.undo else 'wrapped'})")
        for line in diff:
            sys.stdout.write(line if line.endswith("\n") else line + "\n")
        return 0
    saved = False
    try:
        if not args.undo:
            # The records first: a wrapped entry whose original is not kept could not be
            # undone.
            _save_records(records_file, {**records, **change.records}, like=path)
            saved = True
        done = rewrite_in_place(path, [change.text.encode("utf-8")], read_as, changed=True,
                                busy=_BUSY)
    except CommandError as error:
        # The file is as it was (and so is a backup it had): what this run wrote beside it
        # (a backup, removed by rewrite_in_place, and the records) goes too, and the
        # summary is not printed, for it would say what did not happen.
        left = _put_back_records(records_file, kept, path) if saved else ""
        if error.status != 2:  # it changed while it was read: the message says what to do
            raise CommandError(f"{error}{left}", status=error.status) from None
        raise CommandError(f"{error}; nothing was changed: make the file and its folder "
                           "writable (permissions, or chattr -i if immutable), then run again"
                           f"{left}") from None
    if args.undo:
        _save_records(records_file, {key: value for key, value in records.items()
                                     if key not in change.records}, like=path)
    _summary(change, args.undo)
    print(f"toolcap wrap: {done}", file=sys.stderr)
    return 0
