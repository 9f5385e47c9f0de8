"""Keep the test suite off the user's own cache: the default artifact store goes to a
temporary directory for the whole run (subprocesses inherit it)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import Toolcap

_CACHE = tempfile.mkdtemp(prefix="toolcap-tests-cache-")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["XDG_CACHE_HOME"] = _CACHE


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)


@pytest.fixture
def toolcap(tmp_path: Path) -> Toolcap:
    """The ``toolcap`` command, isolated under ``tmp_path`` (see :class:`helpers.Toolcap`)."""
    return Toolcap(tmp_path)
