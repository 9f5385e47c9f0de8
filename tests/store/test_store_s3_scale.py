"""The object store at scale: listing, gc and eviction in requests per page, not per artifact."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from moto_s3 import BUCKET, env_with, moto_s3
from toolcap.cli import main
from toolcap.store import FsspecStore, StoreLimits

DAY = 86400.0


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    from s3fs import S3FileSystem

    # fsspec keeps file systems by their options, not by the endpoint they took
    # from the environment: one made against another module's server is not ours.
    S3FileSystem.clear_instance_cache()
    with moto_s3() as server:
        yield server
    S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3_env(s3: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    for key, value in env_with(AWS_ENDPOINT_URL=s3["endpoint"]).items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    return f"s3://{BUCKET}/{uuid.uuid4().hex}/artifacts"


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every HTTP request the S3 client of this process sends, as 'METHOD query'."""
    from aiobotocore.endpoint import AioEndpoint

    sent: list[str] = []
    original = AioEndpoint._send

    async def counting(self: Any, request: Any) -> Any:
        sent.append(f"{request.method} {request.url.partition('?')[2]}")
        return await original(self, request)

    monkeypatch.setattr(AioEndpoint, "_send", counting)
    return sent


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def fill(url: str, count: int, clock: Clock | None = None) -> list[str]:
    """``count`` artifacts at ``url``, made by a store in memory and copied into moto's state.

    Copying the objects (not putting each through HTTP) keeps the test fast;
    they are the very keys and bytes the store writes.
    """
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    made = FsspecStore(f"memory://fill/{uuid.uuid4().hex}", clock=clock,
                       limits=StoreLimits(max_total_size=None))
    refs = [made.put(b"artifact %d\n" % n * (n % 5 + 1), tool=("Bash", "Read")[n % 2])
            for n in range(count)]
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
    root = made._root + "/"
    prefix = url.removeprefix(f"s3://{BUCKET}/")
    for path in made.fs.find(made._root):
        backend.put_object(BUCKET, prefix + "/" + path.removeprefix(root), made.fs.cat_file(path))
    return refs


def test_ls_of_thousands_of_artifacts_costs_requests_per_page_not_per_artifact(
    s3_env: str, requests: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    count = 3000
    refs = fill(s3_env, count)
    requests.clear()
    assert main(["artifacts", "ls", "--json", "--artifacts", s3_env]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(entry["ref"] for entry in listed) == sorted(refs)
    pages = -(-3 * count // 1000)  # bytes, record and name: three keys an artifact
    assert len(requests) <= pages + 2, requests[:20]
    assert all(r.startswith("GET list-type=2") for r in requests)


def test_a_listed_record_is_the_stored_record(s3_env: str) -> None:
    store = FsspecStore(s3_env)
    partial = FsspecStore(s3_env, limits=StoreLimits(max_artifact_size=2048, minimum=1))
    refs = [store.put(b"line\n" * 100, tool="ツール/名~前 with spaces"),
            store.put(b"no tool"),
            partial.put(b"0123456789\n" * 1000, tool="cap")]
    by_ref = {info.ref: info for info in store.list_artifacts()}
    assert sorted(by_ref) == sorted(refs)
    for ref in refs:
        assert by_ref[ref].to_dict() == store.stat(ref).to_dict()
    assert by_ref[refs[2]].partial


def test_gc_evicts_in_batches_from_one_listing(s3_env: str, requests: list[str]) -> None:
    clock = Clock()
    refs = fill(s3_env, 1500, clock)
    clock.now += 31 * DAY
    store = FsspecStore(s3_env, clock=clock, limits=StoreLimits(max_age_days=30))
    fresh = store.put(b"read today")
    requests.clear()
    report = store.gc()
    assert sorted(ref for ref, _, why in report.evicted if why == "age") == sorted(refs)
    assert [info.ref for info in store.list_artifacts()] == [fresh]
    deletes = [r for r in requests if r.startswith("POST delete")]
    assert 3 <= len(deletes) <= 6  # 1,500 byte keys, then 3,000 record and name keys
    assert len(requests) <= 3 * 5 + len(deletes) + 2  # three listings of at most 5 pages


def test_a_put_over_the_total_evicts_from_a_listing(s3_env: str, requests: list[str]) -> None:
    clock = Clock()
    fill(s3_env, 200, clock)
    clock.now += 2 * 3600
    store = FsspecStore(s3_env, clock=clock, limits=StoreLimits(max_total_size=1024 * 9,
                                                                minimum=1))
    requests.clear()
    store.put(b"x" * 1024)
    gets = [r for r in requests if r.startswith("GET ") and "list-type" not in r]
    assert len(gets) <= 2 and len(requests) < 30  # no record read per artifact
    assert sum(info.bytes for info in store.list_artifacts()) <= 1024 * 9


def test_a_store_written_without_names_is_listed_read_and_evicted(s3_env: str) -> None:
    clock = Clock()
    old = FsspecStore(s3_env, clock=clock)
    refs = [old.put(b"older layout %d\n" % n * 50, tool="Grep") for n in range(5)]
    old.fs.rm(f"{old._root}/.ls", recursive=True)  # as a version before the names wrote it
    store = FsspecStore(s3_env, clock=clock)
    assert sorted(info.ref for info in store.list_artifacts()) == sorted(refs)
    assert store.read_lines(refs[0], 2, 2) == ["older layout 0"]
    assert all(store.stat(ref).tool == "Grep" for ref in refs)
    # Eviction reads their last use from the record object's time (the server's clock).
    clock.now += 400 * DAY
    report = FsspecStore(s3_env, clock=clock, limits=StoreLimits(max_age_days=30)).gc()
    assert sorted(ref for ref, _, _ in report.evicted) == sorted(refs)


def test_racing_readers_leave_two_names_the_latest_counts_and_gc_removes_the_other(
    s3_env: str,
) -> None:
    from toolcap.store._listing import FOLDER, listing_name

    clock = Clock()
    store = FsspecStore(s3_env, clock=clock)
    ref = store.put(b"read by two")
    info = store.stat(ref)
    clock.now += 5 * 3600  # a reader that wrote its new name, then died before removing the old
    later = dataclasses.replace(info, last_read=clock.now)
    store.fs.pipe_file(f"{store._root}/{FOLDER}/{listing_name(later)}", b"")
    [listed] = store.list_artifacts()
    assert listed.last_read == clock.now
    assert [entry[2] for entry in store.scan()] == [clock.now]
    names = store.fs.find(f"{store._root}/{FOLDER}")
    assert len(names) == 2
    store.gc()
    assert [p.rsplit("/", 1)[-1] for p in store.fs.find(f"{store._root}/{FOLDER}")] == [
        listing_name(later).rsplit("/", 1)[-1]]


# A writer to a file:// fsspec store (its spools are on this machine whatever the
# store), killed in the middle of a streamed write.
KILLED_WRITER = """
import sys
from toolcap.store import FsspecStore
store = FsspecStore(sys.argv[1])
writer = store.open_writer(tool="Bash")
writer.write(b"half of a long output\\n" * 1000)
print("ready", flush=True)
sys.stdin.readline()  # blocks until killed
"""


def test_gc_of_an_object_store_removes_the_spools_a_killed_writer_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # this process's spool directory too
    url = f"file://{tmp_path / 'store'}"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, url], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(temp)})
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    spools = temp / f"toolcap-{os.getuid()}"
    assert len(list(spools.iterdir())) == 1
    assert FsspecStore(url).gc(dry_run=True).stale_temporaries == 0  # its writer is alive
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert proc.stdin is not None
    proc.stdin.close()
    proc.stdout.close()
    store = FsspecStore(url)
    assert store.gc(dry_run=True).stale_temporaries == 1
    assert len(list(spools.iterdir())) == 1
    assert store.gc().stale_temporaries == 1
    assert list(spools.iterdir()) == []
    assert store.list_artifacts() == []


def test_the_spool_directory_must_be_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcap.store import StoreError, _spools

    temp = tmp_path / "shared"
    temp.mkdir()
    (temp / f"toolcap-{os.getuid()}").mkdir(mode=0o777)
    os.chmod(temp / f"toolcap-{os.getuid()}", 0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(_spools, "_checked", set())
    with pytest.raises(StoreError, match="not a private directory"):
        FsspecStore(f"file://{tmp_path / 'store'}").open_writer()
