"""The local store on a real disk: modes, written once across processes, crashes, symlinks."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import reference_of
from toolcap import StoreError
from toolcap.store import (
    ArtifactNotFoundError,
    LocalStore,
    default_root,
    open_store,
    parse_ref,
)

HOUR = 3600.0

Files = Callable[[Path], list[Path]]


def payload(megabytes: int) -> bytes:
    """Deterministic, line-structured test content that both parent and child can build."""
    line = b"%09d the quick brown fox jumps over the lazy dog\n"
    count = megabytes * 1024 * 1024 // 56
    return b"".join(line % n for n in range(count))


CHILD_PRELUDE = """
import sys
from toolcap.store import LocalStore
line = b"%09d the quick brown fox jumps over the lazy dog\\n"
def payload(megabytes):
    return b"".join(line % n for n in range(megabytes * 1024 * 1024 // 56))
store = LocalStore(sys.argv[1])
data = payload(int(sys.argv[2]))
"""


def child(script: str, root: Path, megabytes: int) -> subprocess.Popen[str]:
    code = CHILD_PRELUDE + textwrap.dedent(script)
    return subprocess.Popen(
        [sys.executable, "-c", code, str(root), str(megabytes)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )


def kill_mid_write(write: str, root: Path, megabytes: int) -> None:
    """A child process opens a writer on ``root``, runs ``write`` and is killed (SIGKILL)
    before it commits."""
    proc = child(f"""
writer = store.open_writer(tool="Bash")
{write}
print("ready", flush=True)
sys.stdin.readline()  # blocks until killed
""", root, megabytes)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_reference_leads_to_a_plain_file_any_tool_can_open(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "a")
    ref = store.put(b"plain file\n")
    path = store.path_of(ref)
    assert path == tmp_path / "a" / ref[8:10] / ref[8:]
    assert path.read_bytes() == b"plain file\n"
    assert store.stat(ref).location == str(path)


def test_directories_are_0700_and_files_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        store = LocalStore(tmp_path / "deep" / "store")
        ref = store.put(b"secret output")
    finally:
        os.umask(old)
    root = tmp_path / "deep" / "store"
    assert mode(root) == 0o700
    assert mode(root / ".tmp") == 0o700
    data = store.path_of(ref)
    assert mode(data.parent) == 0o700
    assert mode(data) == 0o600
    assert mode(data.with_name(data.name + ".json")) == 0o600


@pytest.mark.parametrize("megabytes", [0.5, 2], ids=["small", "big"])
def test_a_second_put_of_the_same_content_writes_nothing(
    tmp_path: Path, visible_files: Files, megabytes: float
) -> None:
    store = LocalStore(tmp_path / "s")
    data = payload(2)[: int(megabytes * 1024 * 1024)]
    ref = store.put(data)
    path = store.path_of(ref)
    before = visible_files(tmp_path / "s")
    inode = os.lstat(path).st_ino
    # Backdate every directory: creating or removing any entry would move its mtime.
    dirs = [tmp_path / "s", tmp_path / "s" / ".tmp", path.parent]
    for folder in dirs:
        os.utime(folder, ns=(1_000_000_000, 1_000_000_000))
    assert store.put(data) == ref
    if megabytes < 1:
        assert [os.lstat(folder).st_mtime_ns for folder in dirs] == [1_000_000_000] * 3
    else:  # a big put writes a spool while it hashes, and removes it: only .tmp changed
        untouched = (dirs[0], dirs[2])
        assert [os.lstat(folder).st_mtime_ns for folder in untouched] == [1_000_000_000] * 2
        assert list((tmp_path / "s" / ".tmp").glob("*.tmp")) == []
    with store.open_writer() as writer:  # a streamed copy spools, then writes nothing visible
        writer.write(data)
    assert writer.ref == ref
    assert [os.lstat(folder).st_mtime_ns for folder in dirs[2:]] == [1_000_000_000]
    assert os.lstat(dirs[0]).st_mtime_ns == 1_000_000_000
    assert os.lstat(path).st_ino == inode
    assert visible_files(tmp_path / "s") == before
    assert list((tmp_path / "s" / ".tmp").iterdir()) == []
    assert path.read_bytes() == data


@pytest.mark.parametrize("how", ["put", "writer"])
def test_two_processes_storing_the_same_content_at_once_leave_one_artifact(
    tmp_path: Path, visible_files: Files, how: str
) -> None:
    root = tmp_path / "shared"
    script = {
        "put": """
            print("ready", flush=True)
            sys.stdin.readline()
            print(store.put(data), flush=True)
        """,
        "writer": """
            writer = store.open_writer()
            writer.write(data[: len(data) // 2])
            print("ready", flush=True)
            sys.stdin.readline()
            writer.write(data[len(data) // 2 :])
            print(writer.commit(), flush=True)
        """,
    }[how]
    children = [child(script, root, 8) for _ in range(2)]
    for proc in children:  # both are mid-write before either may finish
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in children:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    refs = {proc.communicate(timeout=120)[0].strip() for proc in children}
    assert [proc.returncode for proc in children] == [0, 0]
    data = payload(8)
    expected = reference_of(data)
    assert refs == {expected}
    files = visible_files(root)
    assert [p.name for p in files] == [expected[8:], expected[8:] + ".json"]
    assert list((root / ".tmp").iterdir()) == []
    assert LocalStore(root).read_bytes(expected) == data


def test_different_contents_from_many_processes_all_arrive_intact(tmp_path: Path) -> None:
    root = tmp_path / "many"
    script = """
        data = data + sys.stdin.readline().encode()
        print(store.put(data), flush=True)
    """
    children = [child(script, root, 1) for _ in range(4)]
    for number, proc in enumerate(children):
        assert proc.stdin is not None
        proc.stdin.write(f"writer {number}\n")
        proc.stdin.flush()
    refs = [proc.communicate(timeout=120)[0].strip() for proc in children]
    store = LocalStore(root)
    base = payload(1)
    for number, ref in enumerate(refs):
        assert store.read_bytes(ref) == base + f"writer {number}\n".encode()
    assert len(store.list_artifacts()) == 4


def test_a_writer_killed_mid_write_leaves_no_visible_artifact(
    tmp_path: Path, visible_files: Files, clock: Any
) -> None:
    root = tmp_path / "crash"
    kill_mid_write("writer.write(data[: len(data) // 2])", root, 4)
    clock.now = os.stat(root / ".tmp").st_mtime
    store = LocalStore(root, clock=clock)
    data = payload(4)
    ref = reference_of(data)
    assert visible_files(root) == []
    assert store.list_artifacts() == []
    with pytest.raises(ArtifactNotFoundError):
        store.read_bytes(ref)
    assert len(list((root / ".tmp").iterdir())) == 1  # hidden until the next write
    assert store.put(data) == ref
    assert store.read_bytes(ref) == data
    # Its writer is gone: the next write removed what it left, however recent.
    assert list((root / ".tmp").iterdir()) == []
    assert store.gc().stale_temporaries == 0
    assert store.read_bytes(ref) == data


def test_gc_removes_what_a_killed_writer_left_at_once_and_counts_it(
    tmp_path: Path, clock: Any
) -> None:
    root = tmp_path / "orphan"
    kill_mid_write("writer.write(data)", root, 2)
    clock.now = os.stat(root / ".tmp").st_mtime  # just written: the age rule would keep it
    store = LocalStore(root, clock=clock)
    assert store.gc(dry_run=True).stale_temporaries == 1
    assert len(list((root / ".tmp").iterdir())) == 1
    assert store.gc().stale_temporaries == 1
    assert list((root / ".tmp").iterdir()) == []


def test_a_live_writers_spool_is_never_taken_for_an_orphan(tmp_path: Path) -> None:
    root = tmp_path / "live"
    proc = child(
        """
        writer = store.open_writer(tool="Bash")
        writer.write(data)
        print("ready", flush=True)
        sys.stdin.readline()
        print(writer.commit(), flush=True)
        """,
        root,
        2,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    other = LocalStore(root)
    other.put(b"another write, in another process")  # cleans orphans: there are none
    assert other.gc().stale_temporaries == 0
    assert len(list((root / ".tmp").iterdir())) == 1
    out, _ = proc.communicate("go\n", timeout=120)
    assert other.read_bytes(out.strip()) == payload(2)


def test_gc_skips_what_it_cannot_remove_and_cleans_the_rest(tmp_path: Path, clock: Any) -> None:
    root = tmp_path / "odd"
    store = LocalStore(root, clock=clock)
    store.put(b"make the directories")
    tmp = root / ".tmp"
    (tmp / "a-directory").mkdir()
    (tmp / "a-directory" / "inside").write_bytes(b"x")
    (tmp / ".old.tmp").write_bytes(b"left by an older toolcap")
    clock.advance(2 * HOUR)
    os.utime(tmp / ".old.tmp", (clock.now - 2 * HOUR, clock.now - 2 * HOUR))
    os.utime(tmp / "a-directory", (clock.now - 2 * HOUR, clock.now - 2 * HOUR))
    report = store.gc()
    assert report.stale_temporaries == 1
    assert sorted(p.name for p in tmp.iterdir()) == ["a-directory"]


def test_an_aborted_writer_leaves_nothing(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "abort")
    with pytest.raises(RuntimeError), store.open_writer() as writer:
        writer.write(b"half of it")
        raise RuntimeError("the producer failed")
    assert store.list_artifacts() == []
    assert list((tmp_path / "abort" / ".tmp").iterdir()) == []
    with pytest.raises(StoreError):
        writer.write(b"more")


def test_a_symlink_planted_in_place_of_an_artifact_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not for the model")
    store = LocalStore(tmp_path / "s")
    data = b"content whose name is taken"
    ident = parse_ref(reference_of(data))
    fan = tmp_path / "s" / ident[:2]
    fan.mkdir(parents=True)
    (fan / ident).symlink_to(secret)
    (fan / (ident + ".json")).write_text("{}")
    for operation in (store.read_bytes, store.stat, store.delete):
        with pytest.raises(StoreError, match="refusing"):
            operation("toolcap:" + ident)
    with pytest.raises(StoreError, match="refusing"):
        store.put(data)
    assert secret.read_bytes() == b"not for the model"
    assert (fan / ident).is_symlink()


def test_a_symlinked_fan_out_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = b"redirected"
    ident = parse_ref(reference_of(data))
    (elsewhere / ident).write_bytes(data)
    root = tmp_path / "s"
    root.mkdir()
    (root / ident[:2]).symlink_to(elsewhere, target_is_directory=True)
    store = LocalStore(root)
    with pytest.raises(StoreError, match="refusing"):
        store.read_bytes(ident)
    with pytest.raises(StoreError, match="refusing"):
        store.put(data)
    assert store.list_artifacts() == []


def test_a_symlinked_metadata_record_is_not_followed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    ref = store.put(b"data")
    record = store.path_of(ref).with_name(ref[8:] + ".json")
    record.unlink()
    record.symlink_to("/etc/hostname")
    with pytest.raises(StoreError):
        store.stat(ref)


def test_open_store_takes_the_explicit_location_then_the_environment_then_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLCAP_ARTIFACTS", raising=False)
    default = open_store()
    assert isinstance(default, LocalStore)
    assert default.root == tmp_path / "cache" / "toolcap" / "artifacts" == default_root()
    assert open_store(configured=str(tmp_path / "conf")).location == str(tmp_path / "conf")
    monkeypatch.setenv("TOOLCAP_ARTIFACTS", str(tmp_path / "env"))
    assert open_store(configured=str(tmp_path / "conf")).location == str(tmp_path / "env")
    assert open_store(str(tmp_path / "explicit")).location == str(tmp_path / "explicit")
    assert open_store(f"file://{tmp_path}/url").location == str(tmp_path / "url")
    monkeypatch.setenv("TOOLCAP_ARTIFACTS", "~/tc-artifacts")
    assert open_store().location == os.path.expanduser("~/tc-artifacts")
    assert not (tmp_path / "cache").exists()  # opening creates nothing; the first put does


def test_open_store_takes_limits_from_the_configuration(tmp_path: Path) -> None:
    from toolcap import Config

    config = Config.from_mapping(
        {"store": {"max_artifact_size": "1MB", "max_total_size": "unlimited",
                   "max_age_days": 7}}
    )
    store = open_store(str(tmp_path), limits=config.store)
    assert store.limits.max_artifact_size == 1024 * 1024
    assert store.limits.max_total_size is None
    assert store.limits.max_age_days == 7


def test_a_store_directory_that_cannot_be_created_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    with pytest.raises(StoreError):
        LocalStore(blocker / "store").put(b"x")


def test_a_store_directory_removed_behind_its_back_is_made_again(tmp_path: Path) -> None:
    import shutil

    store = LocalStore(tmp_path / "s")
    first = store.put(b"before")
    shutil.rmtree(tmp_path / "s")
    second = store.put(b"after")
    assert store.read_bytes(second) == b"after"
    assert [info.ref for info in store.list_artifacts()] == [second]
    assert first != second
    assert mode(tmp_path / "s" / ".tmp") == 0o700
