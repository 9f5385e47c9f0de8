"""Configuration: where it is found, what each key means, and per-tool resolution.

Sources, first found wins: an explicit path, ``TOOLCAP_CONFIG``, then the nearest
``toolcap.toml`` or ``pyproject.toml`` with a ``[tool.toolcap]`` table, walking up
from the working directory. ``TOOLCAP_SIZE_THRESHOLD``, ``TOOLCAP_BATCH_CEILING``
and ``TOOLCAP_ARTIFACTS`` override what the file says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .core._cut import Strategy, check_head_ratio, check_strategy
from .core._errors import ConfigError
from .core._marker import Marker
from .core._sizes import Limit, parse_limit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Config", "StoreLimits", "ToolPolicy", "find_config_file", "load_config"]

KB = 1024
MB = 1024 * KB
GB = 1024 * MB


@dataclass(frozen=True)
class ToolPolicy:
    """How one tool's responses are bounded (the resolved ``[tools.NAME]`` table)."""

    size_threshold: Limit = 32 * KB
    strategy: Strategy = "head_tail"
    head_ratio: float = 0.2
    marker: Marker = field(default_factory=Marker)
    spill: bool = True


@dataclass(frozen=True)
class StoreLimits:
    """Bounds on the artifact store (the ``[store]`` table)."""

    max_artifact_size: Limit = 256 * MB
    max_total_size: Limit = 2 * GB
    max_age_days: float = 30.0


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
    notices: bool = True
    read_artifact_tool: str | None = "read_artifact"
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    store: StoreLimits = field(default_factory=StoreLimits)
    source: str | None = None

    def __post_init__(self) -> None:
        # Built in code rather than read from a file: hold it to the same rules.
        for key in ("batch_ceiling", "wire_budget", "media_threshold"):
            object.__setattr__(self, key, parse_limit(getattr(self, key), key=key))
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
_STORE_KEYS = {f.name for f in fields(StoreLimits)}


def _parse(data: Mapping[str, Any], file: str | None) -> Config:
    values: dict[str, Any] = {"source": file}
    for key, value in data.items():
        if key in ("batch_ceiling", "wire_budget", "media_threshold"):
            values[key] = parse_limit(value, key=key, file=file)
        elif key == "artifacts":
            values[key] = _string(value, key, file)
        elif key == "notices":
            values[key] = _boolean(value, key, file)
        elif key == "read_artifact_tool":
            values[key] = None if value is False else _string(value, key, file)
        elif key == "tools":
            values[key] = _parse_tools(value, file)
        elif key == "store":
            values[key] = _parse_store(value, file)
        else:
            raise ConfigError(f"unknown key {key!r}{_known(_TOP_KEYS)}", key=key, file=file)
    return Config(**values)


_TOP_KEYS = (
    "batch_ceiling", "artifacts", "wire_budget", "media_threshold", "notices",
    "read_artifact_tool", "tools", "store",
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
                f"expected a table or a size such as \"8KB\", got {entry!r}", key=prefix, file=file
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
        if isinstance(value, Marker):
            return value
        return Marker.parse(_string(value, where, file), key=where, file=file)
    if key == "spill":
        return _boolean(value, where, file)
    raise ConfigError(f"unknown key {key!r}{_known(_TOOL_KEYS)}", key=where, file=file)


def _parse_store(table: object, file: str | None) -> StoreLimits:
    if not isinstance(table, Mapping):
        raise ConfigError("must be a table", key="store", file=file)
    values: dict[str, Any] = {}
    for key, value in table.items():
        where = f"store.{key}"
        if key in ("max_artifact_size", "max_total_size"):
            values[key] = parse_limit(value, key=where, file=file)
        elif key == "max_age_days":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"expected a positive number of days, got {value!r}",
                                  key=where, file=file)
            values[key] = float(value)
        else:
            raise ConfigError(f"unknown key {key!r}{_known(_STORE_KEYS)}", key=where, file=file)
    return StoreLimits(**values)


def _string(value: object, key: str, file: str | None) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"expected a string, got {value!r}", key=key, file=file)
    return value


def _boolean(value: object, key: str, file: str | None) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"expected true or false, got {value!r}", key=key, file=file)
    return value


def _known(keys: Iterable[str]) -> str:
    return f" (known keys: {', '.join(sorted(keys))})"


def _quote(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else f'"{name}"'


def find_config_file(
    start: Path | None = None, env: Mapping[str, str] | None = None
) -> Path | None:
    """The file configuration would be read from, or ``None`` for the defaults."""
    env = os.environ if env is None else env
    named = env.get("TOOLCAP_CONFIG")
    if named:
        return Path(named)
    directory = (start or Path.cwd()).resolve()
    for folder in (directory, *directory.parents):
        candidate = folder / "toolcap.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_toolcap_table(pyproject):
            return pyproject
    return None


def _has_toolcap_table(pyproject: Path) -> bool:
    try:
        tool = _read_toml(pyproject).get("tool", {})
    except ConfigError:
        return False
    return isinstance(tool, Mapping) and "toolcap" in tool


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            data: dict[str, Any] = tomllib.load(stream)
            return data
    except FileNotFoundError:
        raise ConfigError("configuration file not found", file=str(path)) from None
    except OSError as error:
        raise ConfigError(f"cannot read configuration: {error.strerror}", file=str(path)) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML: {error}", file=str(path)) from None


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    start: Path | None = None,
) -> Config:
    """Load configuration from ``path`` or the first source found, then apply env overrides.

    Raises :class:`ConfigError` naming the file and key of anything invalid.
    """
    file = Path(path) if path is not None else find_config_file(start, env)
    if file is None:
        return Config().with_env(env)
    data = _read_toml(file)
    if file.name == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get("toolcap") if isinstance(tool, Mapping) else None
        if not isinstance(table, Mapping):
            raise ConfigError("no [tool.toolcap] table", file=str(file))
        data = dict(table)
    return Config.from_mapping(data, source=str(file)).with_env(env)

