"""The examples run as written: each in a real subprocess, offline, with its own store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NEEDS = {
    "openai_loop": "openai",
    "anthropic_loop": "anthropic",
    "langchain_tool": "langchain_core",
    "mcp_result": None,
    "plain_python": None,
}


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_runs_offline_and_bounds_its_tool_results(name: str, tmp_path: Path) -> None:
    if NEEDS[name]:
        pytest.importorskip(NEEDS[name])
    env = {**os.environ, "TOOLCAP_ARTIFACTS": str(tmp_path / "artifacts")}
    env.pop("TOOLCAP_CONFIG", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "to the assistant (size_threshold)" in done.stderr  # the notice of a cut
    assert any((tmp_path / "artifacts").rglob("*")), "the full output was kept"
