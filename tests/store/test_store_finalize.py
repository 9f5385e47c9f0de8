"""The store behind the finalizer: spilled once, and store failures stay bounded and honest."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolcap import Config, Policy, ToolResponse
from toolcap.store import LocalStore

KB = 1024
CONFIG = {"tools": {"*": {"size_threshold": "4KB"}}}

# The child finalizes one big response into a local store and reports what came back.
CHILD = """
import json, logging, resource, signal, sys
from toolcap import Config, Policy, ToolResponse
from toolcap.store import LocalStore
if sys.argv[2] != "none":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG from write(), not a kill
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
records = []
logging.getLogger("toolcap").addHandler(type("H", (logging.Handler,), {
    "emit": lambda self, record: records.append((record.levelname, record.getMessage()))})())
config = Config.from_mapping({"tools": {"*": {"size_threshold": "4KB"}}})
text = "".join(f"{n:07d} output that will not fit\\n" for n in range(200_000))
[result] = Policy(config, sink=LocalStore(sys.argv[1])).finalize([ToolResponse("Bash", text)])
print(json.dumps({"text": result.text, "artifacts": result.artifacts,
                  "not_kept": result.not_kept, "records": records}))
"""


# Root writes through any file mode. To see a read-only directory as everyone else
# does, the child drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from its
# bounding set (prctl PR_CAPBSET_DROP) and then executes the real child without them.
DROP_CAPABILITIES = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for capability in (1, 2, 3):
    if libc.prctl(24, capability, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
os.execv(sys.argv[1], sys.argv[1:])
"""


def finalize_in_child(root: Path, *, fsize: int | None = None,
                      unprivileged: bool = False) -> tuple[dict[str, Any], str]:
    command = [sys.executable, "-c", CHILD, str(root), "none" if fsize is None else str(fsize)]
    if unprivileged:
        command = [sys.executable, "-c", DROP_CAPABILITIES, *command]
    done = subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout), done.stderr.decode()


def assert_bounded_without_reference(result: dict[str, Any], stderr: str) -> None:
    assert len(result["text"].encode()) <= 4 * KB
    assert result["artifacts"] == []  # decided, and nothing stored
    assert not re.search(r"toolcap:[0-9a-f]{16}", result["text"])  # no fabricated reference
    assert result["not_kept"]
    assert "the full output could not be kept" in stderr
    assert any(level == "WARNING" for level, _ in result["records"])
    assert not any("output that will not fit" in message for _, message in result["records"])


def test_a_cut_response_is_spilled_once_and_its_marker_names_the_artifact(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "s")
    policy = Policy(Config.from_mapping(CONFIG), sink=store, notices=False)
    text = "x" * (64 * KB)
    [first] = policy.finalize([ToolResponse("Read", text)])
    (ref,) = first.artifacts or ()
    assert ref in (first.text or "")
    assert store.read_bytes(ref) == text.encode()
    [again] = policy.finalize([ToolResponse("Read", text)])
    assert again.artifacts == (ref,)
    assert len(store.list_artifacts()) == 1


def test_a_read_only_store_directory_gives_a_bounded_response_without_a_reference(
    tmp_path: Path,
) -> None:
    root = tmp_path / "readonly"
    root.mkdir()
    as_root = os.geteuid() == 0
    root.chmod(0o500)
    try:
        result, stderr = finalize_in_child(root, unprivileged=as_root)
    finally:
        root.chmod(0o700)
    assert_bounded_without_reference(result, stderr)
    assert list(root.iterdir()) == []


def test_a_file_size_limit_hit_mid_write_gives_a_bounded_response_without_a_reference(
    tmp_path: Path, visible_files: Any
) -> None:
    root = tmp_path / "small-disk"
    result, stderr = finalize_in_child(root, fsize=1024 * KB)  # the original is ~6 MB
    assert_bounded_without_reference(result, stderr)
    assert "too large" in result["not_kept"].lower()
    assert visible_files(root) == []
    assert list((root / ".tmp").iterdir()) == []  # the partial spool was removed
    result, _ = finalize_in_child(root)  # without the limit the same store works
    (ref,) = result["artifacts"]
    assert LocalStore(root).stat(ref).original_bytes > 1024 * KB


@pytest.mark.parametrize("spill", [True, False])
def test_a_tool_with_spilling_off_stores_nothing(tmp_path: Path, spill: bool) -> None:
    store = LocalStore(tmp_path / "s")
    config = Config.from_mapping({"tools": {"*": {"size_threshold": "4KB", "spill": spill}}})
    [result] = Policy(config, sink=store, notices=False).finalize(
        [ToolResponse("Read", "y" * (16 * KB))])
    assert (len(store.list_artifacts()) == 1) is spill
    assert bool(result.artifacts) is spill
