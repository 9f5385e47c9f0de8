"""What several subcommands share: configuration options and errors."""

from __future__ import annotations

import argparse

from .._config import Config, load_config
from .._finalize import Policy
from ..core._errors import CommandError

__all__ = ["CommandError", "add_config_options", "load_cli_config", "policy_from"]


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and ``--artifacts URL``."""
    parser.add_argument("--config", metavar="FILE",
                        help="configuration file (default: TOOLCAP_CONFIG, toolcap.toml or "
                        "[tool.toolcap] in pyproject.toml searched upwards, then the "
                        "user's toolcap.toml; see 'toolcap config show')")
    parser.add_argument("--artifacts", metavar="URL",
                        help="artifact store: a directory or any fsspec URL (default: "
                        "TOOLCAP_ARTIFACTS, the config, or the user cache directory)")


def load_cli_config(args: argparse.Namespace) -> Config:
    """The configuration named by the options, with ``--artifacts`` applied."""
    return load_config(args.config, artifacts=getattr(args, "artifacts", None))


def policy_from(config: Config, *, spill: bool = True) -> Policy:
    """The finalizer for a command: the configured store, or none with ``--no-spill``."""
    return Policy(config) if spill else Policy(config, sink=None)

