"""Fixtures for the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.cli_helpers import Toolcap


@pytest.fixture
def toolcap(tmp_path: Path) -> Toolcap:
    """The toolcap command, isolated under ``tmp_path``."""
    return Toolcap(tmp_path)
