"""``toolcap config``: show the effective configuration, trust or untrust a file."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .._config import _find, _read_toml, load_config
from .._trust import trust, trust_state, untrust, user_config_file
from ..core._errors import ConfigError
from ..core._sizes import human_size
from ..core._tokens import human_tokens
from ._common import CommandError

__all__ = ["register"]

# The environment variables that override a top-level key, as Config.with_env applies them.
_SIZE_KEYS = ("batch_ceiling", "wire_budget", "media_threshold", "max_artifact_size",
              "max_total_size", "context_window", "reserve")
_ENV_KEYS = {"batch_ceiling": "TOOLCAP_BATCH_CEILING", "artifacts": "TOOLCAP_ARTIFACTS"}


def register(subparsers: Any) -> None:
    """Add ``toolcap config`` and its subcommands to the command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="show the effective configuration; trust a project's configuration file",
        description="A configuration file found by walking up from the working directory "
        "(toolcap.toml, or [tool.toolcap] in pyproject.toml) may set bounds, but not where "
        "outputs go (artifacts) unless you trust it. Trust is recorded with the file's "
        f"SHA-256 in {user_config_file().parent}; a changed file is untrusted again.",
    )
    commands = parser.add_subparsers(dest="config_command", metavar="ACTION")
    commands.required = True

    show = commands.add_parser("show", help="the effective configuration and where each "
                               "value comes from")
    show.add_argument("--config", metavar="FILE", help="configuration file to show")
    show.set_defaults(handler=_show)

    for name, verb, handler in (("trust", "trust", _trust), ("untrust", "forget", _untrust)):
        sub = commands.add_parser(name, help=f"{verb} a configuration file "
                                  "(default: the one found from the working directory)")
        sub.add_argument("path", metavar="PATH", nargs="?")
        sub.set_defaults(handler=handler)


def _target(args: argparse.Namespace) -> Path:
    if args.path:
        return Path(args.path)
    found = _find(None, {})  # the walk only: TOOLCAP_CONFIG is trusted already
    if found is None or not found[1]:
        raise CommandError("no toolcap.toml or pyproject.toml with [tool.toolcap] found from "
                           "the working directory; name the file")
    return found[0]


def _trust(args: argparse.Namespace) -> int:
    path = _target(args)
    if not path.is_file():
        raise CommandError(f"{path}: not a file")
    print(f"trusted {trust(path)}")
    return 0


def _untrust(args: argparse.Namespace) -> int:
    path = _target(args)
    if not untrust(path):
        raise CommandError(f"{path.resolve()}: was not trusted", status=1)
    print(f"untrusted {path.resolve()}")
    return 0


def _show(args: argparse.Namespace) -> int:
    found = (Path(args.config), False) if args.config else _find(None, None)
    table: dict[str, Any] = {}
    if found is None:
        # Where to create one: a proxy started by a GUI client reads only that one.
        print("# no configuration file: defaults and environment (the user-level file "
              f"would be {user_config_file()})")
    else:
        file, walked = found
        data, raw = _read_toml(file)
        if file.name == "pyproject.toml":
            tool = data.get("tool", {})
            data = tool.get("toolcap", {}) if isinstance(tool, dict) else {}
        table = data if isinstance(data, dict) else {}
        how = "found from the working directory" if walked else "named or user-level"
        state = f"; {trust_state(file, raw)}" if walked else ""
        print(f"# configuration file: {file} ({how}{state})")
    try:
        config = load_config(args.config)
    except ConfigError as error:
        raise CommandError(str(error)) from None
    for key in ("batch_ceiling", "wire_budget", "media_threshold", "artifacts", "notices",
                "read_artifact_tool", "measure", "context_window", "reserve"):
        value = getattr(config, key)
        shown = human_size(value) if key in _SIZE_KEYS and value is not None else value
        in_tokens = config.measure == "tokens" and key in ("context_window", "reserve")
        if in_tokens and value is not None:
            shown = human_tokens(value)
        print(f"{key} = {_value(shown)}  # {_origin(key, table)}")
    for name, values in sorted(config.tools.items()):
        origin = "TOOLCAP_SIZE_THRESHOLD" if name == "*" and os.environ.get(
            "TOOLCAP_SIZE_THRESHOLD") else "file"
        for key, value in sorted(values.items()):
            shown = value.template if key == "marker" else value
            if key == "size_threshold" and value is not None:
                shown = human_size(value)
            print(f"tools.{_quoted(name)}.{key} = {_value(shown)}  # {origin}")
    for key, value in vars(config.store).items():
        store = table.get("store")
        origin = "file" if isinstance(store, dict) and key in store else "default"
        shown = human_size(value) if key in _SIZE_KEYS and value is not None else value
        print(f"store.{key} = {_value(shown)}  # {origin}")
    return 0


def _origin(key: str, table: dict[str, Any]) -> str:
    variable = _ENV_KEYS.get(key)
    if variable and os.environ.get(variable):
        return variable
    return "file" if key in table else "default"


def _value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):  # keep_lines
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return str(value)


def _quoted(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else f'"{name}"'

