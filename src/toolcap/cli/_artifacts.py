"""``toolcap artifacts``: list, inspect, read back and clean the artifact store."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..core._sizes import human_size
from ._common import CommandError, add_config_options, load_cli_config

if TYPE_CHECKING:
    from ..store import ArtifactInfo, ArtifactStore

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``toolcap artifacts`` and its subcommands to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "artifacts",
        help="list, read and clean the kept full outputs",
        description="Read back what toolcap kept of cut outputs, by reference "
        "(toolcap:<hex>, or at least 16 hex digits of it), and clean the store.",
    )
    commands = parser.add_subparsers(dest="artifacts_command", metavar="ACTION")
    commands.required = True

    ls = commands.add_parser("ls", help="list artifacts, newest first")
    ls.add_argument("--json", action="store_true", help="a JSON array of metadata records")
    ls.set_defaults(handler=_ls)

    show = commands.add_parser("show", help="show an artifact's metadata")
    show.add_argument("ref", metavar="REF")
    show.add_argument("--json", action="store_true", help="the record as JSON")
    show.set_defaults(handler=_show)

    cat = commands.add_parser("cat", help="write an artifact, or a range of it, to stdout")
    cat.add_argument("ref", metavar="REF")
    cat.add_argument("--offset", type=_count, metavar="N", help="first byte (default 0)")
    cat.add_argument("--length", type=_count, metavar="N", help="bytes to read (default: all)")
    cat.add_argument("--lines", metavar="A:B",
                     help="lines A to B, 1-based and inclusive (A:, :B and A also work)")
    cat.add_argument("--pointer", metavar="P",
                     help="of a JSON original, the part at JSON Pointer P (e.g. /results/500)")
    cat.add_argument("--start", type=_count, metavar="N",
                     help="with --pointer to an array: the first item (default 0)")
    cat.add_argument("--count", type=_positive, metavar="N",
                     help="with --pointer to an array: this many items (default: the rest)")
    cat.set_defaults(handler=_cat)

    grep = commands.add_parser("grep", help="search an artifact (RE2 regular expression)")
    grep.add_argument("ref", metavar="REF")
    grep.add_argument("pattern", metavar="PATTERN")
    grep.add_argument("-C", "--context", type=_count, default=0, metavar="N",
                      help="lines of context around each match")
    grep.add_argument("-m", "--max", type=_positive, default=100, metavar="N",
                      help="stop after N matches (default 100)")
    grep.add_argument("-i", "--ignore-case", action="store_true")
    grep.add_argument("-F", "--fixed-strings", action="store_true",
                      help="PATTERN is plain text, not a regular expression")
    grep.set_defaults(handler=_grep)

    gc = commands.add_parser(
        "gc", help="apply the store limits (size, age) and remove stale temporaries",
        description="Evict artifacts older than store.max_age_days, then the least recently "
        "read while the store is over store.max_total_size. Nothing read or written within "
        "the last hour is evicted.",
    )
    gc.add_argument("--dry-run", action="store_true", help="report, remove nothing")
    gc.add_argument("--json", action="store_true", help="the report as JSON")
    gc.set_defaults(handler=_gc)

    verify = commands.add_parser(
        "verify", help="check that artifacts are what their references say",
        description="Read artifacts in full (all of them, or each REF) and check their size "
        "and hash. Prints one line per damaged artifact (REF, tab, what does not match) and "
        "removes it: storing the same content again restores it. Exits 1 if any was damaged.",
    )
    verify.add_argument("refs", metavar="REF", nargs="*", help="artifacts to check (default: all)")
    verify.set_defaults(handler=_verify)

    for sub in (ls, show, cat, grep, gc, verify):
        add_config_options(sub)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def _positive(text: str) -> int:
    value = _count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _store(args: argparse.Namespace) -> ArtifactStore:
    from ..store import open_store

    config = load_cli_config(args)
    return open_store(config.artifacts, limits=config.store)


def _checked_ref(store: ArtifactStore, ref: str) -> str:
    """The full reference; a malformed one is a usage error (exit 2)."""
    from ..store import InvalidReferenceError

    try:
        return store.resolve(ref)
    except InvalidReferenceError as error:
        raise CommandError(str(error)) from None


def _when(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _size(info: ArtifactInfo) -> str:
    if info.partial:
        return f"{human_size(info.bytes)} of {human_size(info.original_bytes)}"
    return human_size(info.bytes)


def _ls(args: argparse.Namespace) -> int:
    infos = _store(args).list_artifacts()
    if args.json:
        print(json.dumps([info.to_dict() for info in infos], indent=1))
        return 0
    for info in infos:
        fields = [info.ref, _size(info), _when(info.created), info.tool or "-"]
        if info.partial:
            fields.append("partial")
        print("\t".join(fields))
    return 0


def _show(args: argparse.Namespace) -> int:
    store = _store(args)
    info = store.stat(_checked_ref(store, args.ref))
    if args.json:
        print(json.dumps(info.to_dict(), indent=1))
        return 0
    rows = [
        ("reference", info.ref),
        ("sha256", info.sha256),
        ("tool", info.tool or "-"),
        ("size", f"{info.bytes} bytes ({human_size(info.bytes)})"),
        ("lines", str(info.lines)),
        ("created", _when(info.created)),
        ("last read", _when(info.last_read)),
        ("location", info.location or "-"),
    ]
    if info.partial:
        tail = info.bytes - (info.head_bytes or 0)
        rows.insert(4, ("partial", f"first {info.head_bytes} and last {tail} bytes of "
                                   f"{info.original_bytes} ({human_size(info.original_bytes)})"))
    for key, value in rows:
        print(f"{key + ':':<11} {value}")
    return 0


def _line_range(text: str) -> tuple[int, int | None]:
    first, sep, last = text.partition(":")
    try:
        start = int(first) if first.strip() else 1
        end = (int(last) if last.strip() else None) if sep else start
    except ValueError:
        raise CommandError(f"--lines: expected A:B with line numbers, got {text!r}") from None
    if start < 1 or (end is not None and end < 1):
        raise CommandError(f"--lines: line numbers start at 1, got {text!r}")
    if end is not None and end < start:
        raise CommandError(f"--lines: the range {text} ends before it starts (write A:B, A <= B)")
    return start, end


def _cat(args: argparse.Namespace) -> int:
    if args.lines is not None and (args.offset is not None or args.length is not None):
        raise CommandError("--lines cannot be combined with --offset or --length")
    by_pointer = args.pointer is not None
    if (args.start is not None or args.count is not None) and not by_pointer:
        raise CommandError("--start and --count select items of the array at --pointer")
    if by_pointer and (args.lines is not None or args.offset is not None
                       or args.length is not None):
        raise CommandError("--pointer cannot be combined with --lines, --offset or --length")
    store = _store(args)
    ref = _checked_ref(store, args.ref)
    out = sys.stdout.buffer
    info = store.stat(ref)
    if by_pointer:
        out.write(_json_part(store, ref, args).encode("utf-8") + b"\n")
    elif args.lines is not None:
        start, end = _line_range(args.lines)
        if start > max(info.lines, 1):
            raise CommandError(f"--lines {args.lines}: {ref} has {info.lines} lines", status=1)
        for line in store.read_lines(ref, start, end):
            out.write(line.encode("utf-8") + b"\n")
    else:
        if args.offset and args.offset > info.bytes:
            raise CommandError(f"--offset {args.offset} is past the end of {ref} "
                               f"({info.bytes} bytes)", status=1)
        for chunk in store.iter_bytes(ref, args.offset or 0, args.length):
            out.write(chunk)
    out.flush()
    _note_partial(store, ref)
    return 0


def _json_part(store: ArtifactStore, ref: str, args: argparse.Namespace) -> str:
    """The part of a JSON original ``--pointer`` (and ``--start``/``--count``) names.

    Through the original's JSON index when it has one (see ``_json_part`` of
    ``proxy/_artifact.py``), else by parsing it whole.
    """
    from ..core._jsondoc import MAX_STRUCTURAL_BYTES
    from ..core._jsonpart import select_stored

    info = store.stat(ref)
    if info.json_index is None and (info.partial or info.bytes > MAX_STRUCTURAL_BYTES):
        raise CommandError(f"--pointer: {ref} is not kept whole or is over 64 MB; "
                           "read it with --lines, --offset or grep", status=1)
    try:
        part, _ = select_stored(info.json_index, lambda low, high: store.read_bytes(
            ref, low, high - low), info.bytes, args.pointer, args.start, args.count)
    except ValueError as error:
        raise CommandError(f"--pointer: {error}", status=1) from None
    return part


def _note_partial(store: ArtifactStore, ref: str) -> None:
    info = store.stat(ref)
    if info.partial:
        print(f"toolcap: note: {ref} keeps only the first {info.head_bytes} and the last "
              f"{info.bytes - (info.head_bytes or 0)} bytes of {info.original_bytes}",
              file=sys.stderr)


def _grep(args: argparse.Namespace) -> int:
    from ..store import grep_rows

    store = _store(args)
    ref = _checked_ref(store, args.ref)
    try:
        result = store.grep(ref, args.pattern, context=args.context, max_matches=args.max,
                            ignore_case=args.ignore_case, fixed=args.fixed_strings)
    except ValueError as error:
        raise CommandError(str(error)) from None
    for row in grep_rows(result, separate=bool(args.context)):
        print(row)
    if result.truncated:
        print(f"toolcap: stopped after {args.max} matches; more exist (raise --max)",
              file=sys.stderr)
    return 0 if result.matches else 1


def _gc(args: argparse.Namespace) -> int:
    report = _store(args).gc(dry_run=args.dry_run)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return 0
    verb = "would evict" if report.dry_run else "evicted"
    for ref, size, reason in report.evicted:
        print(f"{verb}\t{ref}\t{human_size(size)}\t{reason}")
    print(f"{verb} {len(report.evicted)} artifacts ({human_size(report.freed)}), "
          f"kept {report.kept} ({human_size(report.total_after)}), "
          f"{'would remove' if report.dry_run else 'removed'} "
          f"{report.stale_temporaries} stale temporaries")
    if report.over_limit:
        print("toolcap: the store is still over max_total_size: the rest was used within "
              "the last hour", file=sys.stderr)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from ..store import ArtifactNotFoundError, DamagedArtifactError

    store = _store(args)
    if args.refs:
        refs = [_checked_ref(store, ref) for ref in args.refs]
    else:
        refs = [info.ref for info in store.list_artifacts()]
    damaged = 0
    for ref in refs:
        try:
            store.verify(ref)
        except DamagedArtifactError as error:
            damaged += 1
            print(f"{error.ref}\t{error.reason}")
        except ArtifactNotFoundError:
            if args.refs:
                raise
            # Listed, then evicted or deleted by another process: nothing to check.
    print(f"toolcap: checked {len(refs)} artifacts, {damaged} damaged"
          + (" (removed: storing the same content again restores them)" if damaged else ""),
          file=sys.stderr)
    return 1 if damaged else 0
