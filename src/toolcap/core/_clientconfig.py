"""Rewriting an MCP client's configuration so that each server goes through ``toolcap proxy``.

The shapes known (server maps, and how an entry says it is local or remote):

- ``mcpServers`` at the top: Claude Desktop, Claude Code's ``.mcp.json`` and the
  user scope of ``~/.claude.json``, Cursor, Windsurf, Gemini CLI;
- ``projects.<path>.mcpServers``: Claude Code's ``~/.claude.json``, per project;
- ``servers`` at the top: VS Code's ``mcp.json``.

A local entry has ``command`` (and ``args``, ``env``, ``cwd``...); a remote one
has ``url``, ``serverUrl`` (Windsurf) or ``httpUrl`` (Gemini CLI), with
``headers``; ``type`` says ``stdio``, ``http`` or ``sse`` where the client uses it.
A wrapped remote entry is a local one (every client gives those an ``env``): its
header values go there, named by ``--header-env``, never into ``args``.

Only the text of each wrapped entry changes: everything else (formatting, key
order, comments of JSONC) is kept byte for byte. The exact text of each
original entry is returned as a record, so that undoing restores it byte for
byte. Pure: text in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import ConfigError
from ._headers import header_problem
from ._jsonspans import JsonSyntaxError, Node, parse_with_spans

__all__ = ["Change", "Server", "find_servers", "is_wrapped", "unwrap_text", "wrap_text"]

_URL_KEYS = ("httpUrl", "serverUrl", "url")  # the first present names the endpoint
_CLIENT_AUTH_KEYS = ("oauth", "authProviderType", "headersHelper")
_EXECUTABLES = ("toolcap", "toolcap.exe")


@dataclass(frozen=True)
class Server:
    """One server entry: its name, where it is (a JSON pointer) and its parsed node."""

    name: str
    pointer: str
    node: Node
    key_start: int
    project: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name} (project {self.project})" if self.project else self.name


@dataclass
class Change:
    """What a wrap or an undo did: the new text, and what happened to each server."""

    text: str
    done: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: pointer -> {"original": text, "wrapped": text}, for the records file.
    records: dict[str, dict[str, str]] = field(default_factory=dict)


def _pointer(*parts: str) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def find_servers(text: str, source: str) -> list[Server]:
    """Every server entry of a client configuration, in file order.

    Raises ConfigError (one line naming ``source``) for text that is not JSON or
    JSONC, a shape no client uses, or no servers at all.
    """
    try:
        root, _ = parse_with_spans(text)
    except JsonSyntaxError as exc:
        raise ConfigError(f"not JSON: {exc}", file=source) from None
    if not isinstance(root.value, dict):
        raise ConfigError("not an MCP client configuration: the top level is not an object",
                          file=source)
    maps: list[tuple[Node, tuple[str, ...], str | None]] = []
    for key in ("mcpServers", "servers"):
        if key in root.members:
            maps.append((root.members[key], (key,), None))
    projects = root.members.get("projects")
    if projects is not None and isinstance(projects.value, dict):
        for folder, settings in projects.members.items():
            if isinstance(settings.value, dict) and "mcpServers" in settings.members:
                maps.append((settings.members["mcpServers"], ("projects", folder, "mcpServers"),
                             folder))
    if not maps:
        raise ConfigError(
            "no MCP servers: expected mcpServers (Claude Desktop, Claude Code, Cursor, "
            "Windsurf, Gemini CLI), servers (VS Code) or projects.*.mcpServers (~/.claude.json)",
            file=source)
    servers: list[Server] = []
    for node, path, project in maps:
        if not isinstance(node.value, dict):
            raise ConfigError(f"{'.'.join(path)} is not an object of servers", file=source)
        for name, entry in node.members.items():
            servers.append(Server(name, _pointer(*path, name), entry, node.key_starts[name],
                                  project))
    if not servers:
        raise ConfigError("no servers to wrap: the server list is empty", file=source)
    servers.sort(key=lambda server: server.node.start)
    return servers


def is_wrapped(entry: Any) -> bool:
    """Whether an entry already starts ``toolcap proxy`` (by whatever path)."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list) or not args:
        return False
    executable = command.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return executable in _EXECUTABLES and args[0] == "proxy"


def _why_not(entry: Any, gemini: bool) -> str | None:
    """Why an entry cannot go through the proxy, or None."""
    if not isinstance(entry, dict):
        return "not an object"
    if any(key in entry for key in _CLIENT_AUTH_KEYS):
        return "it signs in through the client (OAuth), which does not pass through the proxy"
    if isinstance(entry.get("command"), str):
        return None
    url_key = next((key for key in _URL_KEYS if isinstance(entry.get(key), str)), None)
    if url_key is None:
        return "no command and no URL"
    if entry.get("type") == "sse" or (gemini and url_key == "url"):
        return "SSE transport: toolcap proxy --url speaks Streamable HTTP only"
    headers = entry.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(value, str) for value in headers.values()
    ):
        return "its headers are not an object of strings"
    for name, value in headers.items():
        if (problem := header_problem(name, value)) is not None:
            return f"a header no HTTP request can carry: {problem}"
    if len({name.lower() for name in headers}) < len(headers):
        return "two headers whose names differ only in case (HTTP names are case-insensitive)"
    return None


def _wrapped_entry(entry: dict[str, Any], toolcap: str) -> dict[str, Any]:
    """The entry with the proxy in front, keys in their original order."""
    if isinstance(entry.get("command"), str):
        args = entry.get("args", [])
        proxied = ["proxy", "--", entry["command"], *(args if isinstance(args, list) else [])]
        out: dict[str, Any] = {}
        for key, value in entry.items():
            if key == "command":
                out["command"] = toolcap
                out["args"] = proxied
            elif key != "args":
                out[key] = value
        return out
    url_key = next(key for key in _URL_KEYS if isinstance(entry.get(key), str))
    args = ["proxy", "--url", entry[url_key]]
    env = entry.get("env")
    env = dict(env) if isinstance(env, dict) else {}
    for name, value in entry.get("headers", {}).items():
        # Its value goes to the entry's env, named by --header-env: an argument is seen
        # by every local user (ps), the environment only by its owner.
        variable = _header_variable(name, env)
        env[variable] = value
        args += ["--header-env", f"{name}={variable}"]
    out = {}
    for key, value in entry.items():
        if key == url_key:
            out["command"] = toolcap
            out["args"] = args
            if env and "env" not in entry:
                out["env"] = env
        elif key == "type":
            out["type"] = "stdio"
        elif key == "env" and env:
            out["env"] = env
        elif key not in _URL_KEYS and key != "headers":
            out[key] = value
    return out


def _header_variable(header: str, env: Mapping[str, Any]) -> str:
    """A name for the variable holding ``header``'s value, not yet in ``env``."""
    stem = "TOOLCAP_HEADER_" + "".join(c if c.isascii() and c.isalnum() else "_"
                                       for c in header.upper())
    name, number = stem, 1
    while name in env:
        number += 1
        name = f"{stem}_{number}"
    return name


def _line_indent(text: str, at: int) -> str:
    """The white space before ``at`` on its line, if only white space is there."""
    line_start = text.rfind("\n", 0, at) + 1
    before = text[line_start:at]
    return before if not before.strip() else ""


def _indent_unit(text: str, original: str, base: str) -> str:
    """The file's indentation step, from the entry itself or else from the file."""
    for line in original.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and line.startswith(base) and len(line) - len(stripped) > len(base):
            return line[len(base):len(line) - len(stripped)]
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped.startswith('"') and len(line) > len(stripped):
            return line[:len(line) - len(stripped)]
    return "  "


def _render(value: Any, base: str, unit: str, newline: str, inline_arrays: bool) -> str:
    """JSON for ``value`` laid out like the entry it replaces."""
    if isinstance(value, dict) and value:
        inner = base + unit
        members = [
            f"{inner}{json.dumps(key, ensure_ascii=False)}: "
            f"{_render(item, inner, unit, newline, inline_arrays)}"
            for key, item in value.items()
        ]
        return "{" + newline + ("," + newline).join(members) + newline + base + "}"
    if isinstance(value, list) and value and not (
        inline_arrays and not any(isinstance(item, (dict, list)) for item in value)
    ):
        inner = base + unit
        items = [inner + _render(item, inner, unit, newline, inline_arrays) for item in value]
        return "[" + newline + ("," + newline).join(items) + newline + base + "]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _format_like(text: str, server: Server, entry: dict[str, Any]) -> str:
    """The new entry laid out like the one it replaces; members it did not change keep
    their original text."""
    original = text[server.node.start:server.node.end]

    def member_text(key: str, base: str, unit: str, newline: str, inline: bool) -> str:
        old = server.node.members.get(key)
        if old is not None and old.value == entry[key]:
            return text[old.start:old.end]
        if not newline:
            return json.dumps(entry[key], ensure_ascii=False, separators=(", ", ": "))
        return _render(entry[key], base + unit, unit, newline, inline)

    if "\n" not in original:
        members = [f"{json.dumps(key, ensure_ascii=False)}: {member_text(key, '', '', '', True)}"
                   for key in entry]
        return "{" + ", ".join(members) + "}"
    newline = "\r\n" if "\r\n" in original else "\n"
    base = _line_indent(text, server.key_start)
    unit = _indent_unit(text, original, base)
    # Arrays stay on one line when the original entry wrote them so.
    inline = all(not line.rstrip().endswith("[") for line in original.splitlines())
    members = [f"{base}{unit}{json.dumps(key, ensure_ascii=False)}: "
               f"{member_text(key, base, unit, newline, inline)}" for key in entry]
    return "{" + newline + ("," + newline).join(members) + newline + base + "}"


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    at = 0
    for start, end, replacement in sorted(edits):
        parts += [text[at:start], replacement]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _chosen(servers: list[Server], names: Collection[str] | None,
            source: str) -> Iterator[Server]:
    if names:
        known = {server.name for server in servers}
        missing = [name for name in names if name not in known]
        if missing:
            raise ConfigError(f"no server named {missing[0]!r} (servers: "
                              f"{', '.join(sorted(known))})", file=source)
    return (server for server in servers if not names or server.name in names)


def wrap_text(text: str, source: str, toolcap: str, *, names: Collection[str] | None = None,
              gemini: bool = False) -> Change:
    """Put ``toolcap proxy`` (the executable at ``toolcap``) in front of each server.

    ``names`` limits it to those servers; ``gemini`` reads a bare ``url`` as SSE
    (as Gemini CLI does). Entries already wrapped are left alone.
    """
    change = Change(text)
    edits: list[tuple[int, int, str]] = []
    for server in _chosen(find_servers(text, source), names, source):
        entry = server.node.value
        if is_wrapped(entry):
            change.unchanged.append(server.label)
            continue
        why = _why_not(entry, gemini)
        if why is not None:
            change.skipped.append((server.label, why))
            continue
        new = _format_like(text, server, _wrapped_entry(entry, toolcap))
        edits.append((server.node.start, server.node.end, new))
        change.records[server.pointer] = {
            "original": text[server.node.start:server.node.end], "wrapped": new,
        }
        change.done.append(server.label)
    change.text = _splice(text, edits)
    return change


_EDITED = ("changed since it was wrapped, and undoing would lose that change: edit it back "
           "by hand (its original entry is kept in the wrap record beside the file)")


def _edited_since(server: Server, record: Mapping[str, str]) -> bool:
    """Whether the wrapped entry's value is no longer the one wrap wrote (a client that
    only lays the file out again changes no value)."""
    wrapped = record.get("wrapped")
    if not isinstance(wrapped, str):
        return False  # nothing to compare with: the original is all there is
    try:
        written, _ = parse_with_spans(wrapped)
    except JsonSyntaxError:
        return False
    return bool(written.value != server.node.value)


def unwrap_text(text: str, source: str, records: Mapping[str, Mapping[str, str]], *,
                names: Collection[str] | None = None) -> Change:
    """Put back the original text of each wrapped entry that has a record.

    An entry whose value was changed since it was wrapped is left as it is (with
    the reason): putting the original back would silently undo that change. The
    records used are returned in ``change.records`` (to be forgotten).
    """
    change = Change(text)
    edits: list[tuple[int, int, str]] = []
    for server in _chosen(find_servers(text, source), names, source):
        if not is_wrapped(server.node.value):
            change.unchanged.append(server.label)
            continue
        record = records.get(server.pointer)
        if record is None or not isinstance(record.get("original"), str):
            change.skipped.append((server.label, "no record of its original entry"))
            continue
        if _edited_since(server, record):
            change.skipped.append((server.label, _EDITED))
            continue
        edits.append((server.node.start, server.node.end, record["original"]))
        change.records[server.pointer] = dict(record)
        change.done.append(server.label)
    change.text = _splice(text, edits)
    return change
