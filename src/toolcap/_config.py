"""Configuration: where it is found, what each key means, and per-tool resolution.

Sources, first found wins: an explicit path, ``TOOLCAP_CONFIG``, the nearest
``toolcap.toml`` or ``pyproject.toml`` with a ``[tool.toolcap]`` table walking up
from the working directory, then the user-level file (``~/.config/toolcap/toolcap.toml``
on Linux). ``TOOLCAP_SIZE_THRESHOLD``, ``TOOLCAP_BATCH_CEILING`` and
``TOOLCAP_ARTIFACTS`` override what the file says.

A file found by walking up may come from a cloned repository: it may set bounds,
but not where outputs go unless the user trusts it (see :mod:`toolcap._trust`).
Every file is read within bounds (a regular file of at most 1 MB, UTF-8, nested
no deeper than the parser allows): anything else is a one-line :class:`ConfigError`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ._keep import DEFAULT_SHARE, check_share, compiled_keep_lines, keep_lines
from ._trust import REDIRECTING_KEYS, read_regular_file, trust_state, user_config_file
from .core._cut import Strategy, check_head_ratio, check_strategy
from .core._errors import ConfigError
from .core._errors import shown as _shown
from .core._jsondoc import Format, check_format
from .core._keeplines import KeepLines
from .core._marker import Marker
from .core._pressure import parse_window
from .core._sizes import Limit, parse_limit
from .core._store_limits import StoreLimits
from .core._tokens import check_measure

__all__ = ["Config", "StoreLimits", "ToolPolicy", "find_config_file", "load_config"]

KB = 1024


@dataclass(frozen=True)
class ToolPolicy:
    """How one tool's responses are bounded (the resolved ``[tools.NAME]`` table)."""

    size_threshold: Limit = 32 * KB
    strategy: Strategy = "head_tail"
    head_ratio: float = 0.2
    marker: Marker = field(default_factory=Marker)
    spill: bool = True
    format: Format = "auto"
    #: Patterns of the lines a cut keeps from its elided part; ``None``: the built-in set.
    keep_lines: tuple[str, ...] | None = None
    keep_lines_share: float = DEFAULT_SHARE

    @property
    def keep(self) -> KeepLines:
        """``keep_lines`` and ``keep_lines_share``, compiled (once per distinct value)."""
        return compiled_keep_lines(self.keep_lines, self.keep_lines_share)

    @property
    def cut_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`toolcap.core._jsoncut.cut_by_format` it sets."""
        return {"format": self.format, **self.text_cut_options}

    @property
    def text_cut_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`toolcap.core._cut.cut` it sets."""
        return {"strategy": self.strategy, "head_ratio": self.head_ratio,
                "marker": self.marker, "keep_lines": self.keep}


@dataclass(frozen=True)
class Config:
    """Everything toolcap reads from configuration, with the built-in defaults.

    ``tools`` maps a tool name (or ``"*"`` for every tool) to the keys its table
    sets; :meth:`for_tool` resolves each key from the tool's own table, else the
    ``"*"`` table, else the default.
    """

    batch_ceiling: Limit = 256 * KB
    artifacts: str | None = None
    wire_budget: Limit = 64 * KB
    media_threshold: Limit = 256 * KB
    #: The proxy's longest upstream message; a longer one is streamed to the store.
    max_line_size: Limit = 256 * 1024 * KB
    notices: bool = True
    #: The model's context window, in ``measure``'s unit (under bytes, tokens are
    #: converted): the batch ceiling of a turn then shrinks as the window fills.
    #: ``None``: no context pressure.
    context_window: int | None = None
    #: Room kept for the answer when ``context_window`` is set (32,768 bytes or tokens).
    reserve: int = 32 * KB
    #: What context pressure counts in: ``"bytes"`` or ``"tokens"`` (docs/tokens.md).
    measure: str = "bytes"
    read_artifact_tool: str | None = "read_artifact"
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    store: StoreLimits = field(default_factory=StoreLimits)
    source: str | None = None

    def __post_init__(self) -> None:
        # Built in code rather than read from a file: hold it to the same rules.
        for key in ("batch_ceiling", "wire_budget", "media_threshold", "max_line_size"):
            object.__setattr__(self, key, parse_limit(getattr(self, key), key=key))
        check_measure(self.measure)
        for key in ("context_window", "reserve"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, parse_window(getattr(self, key), key=key,
                                                           measure=self.measure))
        object.__setattr__(self, "tools", _parse_tools(self.tools, self.source))

    def for_tool(self, name: str) -> ToolPolicy:
        """The policy for tool ``name``."""
        merged = {**self.tools.get("*", {}), **self.tools.get(name, {})}
        return ToolPolicy(**merged) if merged else _DEFAULT_TOOL

    def unknown_tools(self, known: Iterable[str]) -> list[str]:
        """Tool names the configuration sets that are not among ``known``."""
        known_names = set(known)
        return sorted(name for name in self.tools if name != "*" and name not in known_names)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str | None = None) -> Config:
        """Validate a configuration table (as TOML would give it)."""
        return _parse(data, source)

    def with_tool(self, name: str, **values: object) -> Config:
        """This configuration with ``values`` set in tool ``name``'s own table (None: unset)."""
        given = {key: value for key, value in values.items() if value is not None}
        if not given:
            return self
        tools = dict(self.tools)
        tools[name] = {**tools.get(name, {}), **given}
        return replace(self, tools=tools)

    def with_env(self, env: Mapping[str, str] | None = None) -> Config:
        """Apply the ``TOOLCAP_*`` environment overrides."""
        env = os.environ if env is None else env
        config = self
        threshold = env.get("TOOLCAP_SIZE_THRESHOLD")
        if threshold:
            limit = parse_limit(threshold, key="TOOLCAP_SIZE_THRESHOLD")
            # None (unlimited) must be written as a value here, not skipped as unset.
            tools = dict(config.tools)
            tools["*"] = {**tools.get("*", {}), "size_threshold": limit}
            config = replace(config, tools=tools)
        ceiling = env.get("TOOLCAP_BATCH_CEILING")
        if ceiling:
            ceiling_limit = parse_limit(ceiling, key="TOOLCAP_BATCH_CEILING")
            config = replace(config, batch_ceiling=ceiling_limit)
        artifacts = env.get("TOOLCAP_ARTIFACTS")
        if artifacts:
            config = replace(config, artifacts=artifacts)
        return config


_DEFAULT_TOOL = ToolPolicy()
_TOOL_KEYS = {f.name for f in fields(ToolPolicy)}


def _parse(data: Mapping[str, Any], file: str | None) -> Config:
    values: dict[str, Any] = {"source": file}
    # First: it says what the window and the reserve are counted in.
    measure = check_measure(data.get("measure", "bytes"), file=file)
    for key, value in data.items():
        if key in ("batch_ceiling", "wire_budget", "media_threshold", "max_line_size"):
            values[key] = parse_limit(value, key=key, file=file)
        elif key in ("context_window", "reserve"):
            values[key] = parse_window(value, key=key, file=file, measure=measure)
        elif key == "measure":
            values[key] = measure
        elif key == "artifacts":
            values[key] = _string(value, key, file)
        elif key == "notices":
            values[key] = _boolean(value, key, file)
        elif key == "read_artifact_tool":
            values[key] = None if value is False else _string(value, key, file)
        elif key == "tools":
            values[key] = _parse_tools(value, file)
        elif key == "store":
            values[key] = StoreLimits.from_mapping(value, file=file)
        else:
            raise ConfigError(f"unknown key {key!r}{_known(_TOP_KEYS)}", key=key, file=file)
    return Config(**values)


_TOP_KEYS = (
    "batch_ceiling", "artifacts", "wire_budget", "media_threshold", "notices",
    "read_artifact_tool", "tools", "store", "max_line_size", "context_window", "reserve",
    "measure",
)


def _parse_tools(table: object, file: str | None) -> dict[str, dict[str, Any]]:
    if not isinstance(table, Mapping):
        raise ConfigError("must be a table of tool names", key="tools", file=file)
    tools: dict[str, dict[str, Any]] = {}
    for name, entry in table.items():
        prefix = f"tools.{_quote(name)}"
        if isinstance(entry, (str, int)) and not isinstance(entry, bool):
            tools[name] = {"size_threshold": parse_limit(entry, key=prefix, file=file)}
            continue
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"expected a table or a size such as \"8KB\", got {_shown(entry)}",
                key=prefix,
                file=file,
            )
        tools[name] = {k: _parse_tool_key(k, v, f"{prefix}.{k}", file) for k, v in entry.items()}
    return tools


def _parse_tool_key(key: str, value: object, where: str, file: str | None) -> object:
    if key == "size_threshold":
        if value is None:
            return None  # unlimited, as parsed before
        return parse_limit(value, key=where, file=file)  # type: ignore[arg-type]
    if key == "strategy":
        return check_strategy(_string(value, where, file), key=where, file=file)
    if key == "head_ratio":
        return check_head_ratio(value, key=where, file=file)
    if key == "marker":
        if isinstance(value, Marker):  # built in code: held to the same rules
            value = value.template
        return Marker.parse(_string(value, where, file), key=where, file=file)
    if key == "spill":
        return _boolean(value, where, file)
    if key == "format":
        return check_format(value, key=where, file=file)
    if key == "keep_lines":
        patterns = _string_list(value, where, file)
        keep_lines(patterns, key=where, file=file)  # a bad pattern is told when loading
        return patterns
    if key == "keep_lines_share":
        return check_share(value, key=where, file=file)
    raise ConfigError(f"unknown key {key!r}{_known(_TOOL_KEYS)}", key=where, file=file)


def _string(value: object, key: str, file: str | None) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"expected a string, got {_shown(value)}", key=key, file=file)
    return value


def _string_list(value: object, key: str, file: str | None) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ConfigError(f"expected a list of strings, got {_shown(value)}", key=key, file=file)


def _boolean(value: object, key: str, file: str | None) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"expected true or false, got {_shown(value)}", key=key, file=file)
    return value


def _known(keys: Iterable[str]) -> str:
    return f" (known keys: {', '.join(sorted(keys))})"


def _quote(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else f'"{name}"'


def find_config_file(
    start: Path | None = None, env: Mapping[str, str] | None = None
) -> Path | None:
    """The file configuration would be read from, or ``None`` for the defaults."""
    found = _find(start, env)
    return found[0] if found else None


def _find(start: Path | None, env: Mapping[str, str] | None) -> tuple[Path, bool] | None:
    """The file configuration comes from, and whether it was found by walking up."""
    env = os.environ if env is None else env
    named = env.get("TOOLCAP_CONFIG")
    if named:
        return Path(named), False
    directory = (start or Path.cwd()).resolve()
    for folder in (directory, *directory.parents):
        candidate = folder / "toolcap.toml"
        if candidate.is_file():
            return candidate, True
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_toolcap_table(pyproject):
            return pyproject, True
    user_file = user_config_file()
    return (user_file, False) if user_file.is_file() else None


def _has_toolcap_table(pyproject: Path) -> bool:
    try:
        tool = _read_toml(pyproject)[0].get("tool", {})
    except ConfigError:
        return False
    return isinstance(tool, Mapping) and "toolcap" in tool


def _read_toml(path: Path) -> tuple[dict[str, Any], bytes]:
    """The parsed file and the bytes it was parsed from (what trust is checked against)."""
    raw = read_regular_file(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"not UTF-8 (invalid byte at offset {error.start}); save the file as UTF-8",
            file=str(path),
        ) from None
    # Imported here: a command run with no configuration file never needs it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        return tomllib.loads(text), raw
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML: {error}", file=str(path)) from None
    except RecursionError:
        raise ConfigError("nested too deeply to read; flatten the tables", file=str(path)) from None


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    start: Path | None = None,
    artifacts: str | None = None,
) -> Config:
    """Load configuration from ``path`` or the first source found, then apply env overrides.

    ``artifacts`` is a store location given by the caller (``--artifacts``): it
    wins over every source. Raises :class:`ConfigError` naming the file and key
    of anything invalid, and for a store location set by a file found walking up
    from ``start`` that the user has not trusted.
    """
    found = (Path(path), False) if path is not None else _find(start, env)
    if found is None:
        config = Config().with_env(env)
    else:
        file, walked = found
        data, raw = _read_toml(file)
        if file.name == "pyproject.toml":
            tool = data.get("tool", {})
            table = tool.get("toolcap") if isinstance(tool, Mapping) else None
            if not isinstance(table, Mapping):
                raise ConfigError("no [tool.toolcap] table", file=str(file))
            data = dict(table)
        try:
            config = Config.from_mapping(data, source=str(file)).with_env(env)
        except RecursionError:
            raise ConfigError("nested too deeply to read", file=str(file)) from None
        if walked:
            _check_redirects(file, raw, data, env, artifacts)
    return replace(config, artifacts=artifacts) if artifacts else config


def _check_redirects(
    file: Path, raw: bytes, data: Mapping[str, Any], env: Mapping[str, str] | None,
    artifacts: str | None,
) -> None:
    """Refuse a key that sends data elsewhere from a file the user has not trusted."""
    env = os.environ if env is None else env
    # A location given by the caller or the environment wins: the file's is never used.
    overridden = {"artifacts"} if artifacts or env.get("TOOLCAP_ARTIFACTS") else set()
    keys = [key for key in REDIRECTING_KEYS if key in data and key not in overridden]
    if not keys:
        return
    state = trust_state(file, raw)
    if state == "trusted":
        return
    why = "changed since you trusted it" if state == "changed" else "not trusted"
    raise ConfigError(
        f"a file found from the working directory may not set where outputs go ({why});"
        f" review it, then run `toolcap config trust {file}`, or set it in {user_config_file()}",
        key=keys[0],
        file=str(file),
    )
