"""Keep the test suite off the user's own cache and configuration: the default artifact
store and the user configuration directory go to temporary directories for the whole run
(subprocesses inherit them)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import Toolcap

_CACHE = tempfile.mkdtemp(prefix="toolcap-tests-cache-")
# The user-level configuration file and the trust record live here, never in the user's own.
_CONFIG = tempfile.mkdtemp(prefix="toolcap-tests-config-")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["XDG_CACHE_HOME"] = _CACHE
    os.environ["XDG_CONFIG_HOME"] = _CONFIG


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)
    shutil.rmtree(_CONFIG, ignore_errors=True)


@pytest.fixture
def toolcap(tmp_path: Path) -> Toolcap:
    """The ``toolcap`` command, isolated under ``tmp_path`` (see :class:`helpers.Toolcap`)."""
    return Toolcap(tmp_path)
