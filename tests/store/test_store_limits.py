"""Store limits: the largest artifact (head and tail kept), total size, age, the grace hour."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import reference_of
from toolcap import Config, ConfigError, StoreLimits
from toolcap.core._refs import format_ref
from toolcap.store import ArtifactStore, LocalStore, MemoryStore

HOUR = 3600.0
DAY = 86400.0
KB = 1024


@pytest.fixture(params=["memory", "local", "fsspec"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path, clock: Any) -> Any:
    """A factory of stores of one kind that share the test's fake clock."""

    def make(**values: Any) -> ArtifactStore:
        limits = StoreLimits(**values, minimum=1)  # tiny limits, on purpose
        if request.param == "memory":
            return MemoryStore(clock=clock, limits=limits)
        if request.param == "local":
            return LocalStore(tmp_path / "store", clock=clock, fsync=False, limits=limits)
        pytest.importorskip("fsspec")
        from toolcap.store import FsspecStore

        made: ArtifactStore = FsspecStore(f"memory://gc-tests/{uuid.uuid4().hex}", clock=clock,
                                          limits=limits)
        return made

    return make


def blob(n: int, size: int = KB) -> bytes:
    return (b"%04d" % n) * (size // 4)


def refs_of(store: ArtifactStore) -> set[str]:
    return {info.ref for info in store.list_artifacts()}


def test_gc_evicts_artifacts_not_read_for_max_age_days(make_store: Any, clock: Any) -> None:
    store = make_store(max_age_days=30)
    old = store.put(blob(1))
    clock.advance(31 * DAY)
    new = store.put(blob(2))
    report = store.gc()
    assert report.evicted == [(old, KB, "age")]
    assert refs_of(store) == {new}
    assert (report.kept, report.total_before, report.total_after) == (1, 2 * KB, KB)


def test_reading_an_artifact_keeps_it_from_aging_out(make_store: Any, clock: Any) -> None:
    store = make_store(max_age_days=30)
    ref = store.put(blob(1))
    clock.advance(29 * DAY)
    store.read_lines(ref, 1, 1)
    clock.advance(29 * DAY)
    assert store.gc().evicted == []
    assert refs_of(store) == {ref}


def test_a_write_over_the_total_size_evicts_the_least_recently_read_first(
    make_store: Any, clock: Any
) -> None:
    store = make_store(max_total_size=3 * KB, max_age_days=None)
    a, _b, c = [store.put(blob(n)) for n in range(3) if clock.advance(1) is None]
    clock.advance(2 * HOUR)
    store.read_bytes(a, 0, 10)  # a is now the most recently used of the three
    clock.advance(2 * HOUR)
    d = store.put(blob(3))
    assert refs_of(store) == {a, c, d}
    e = store.put(blob(4))
    assert refs_of(store) == {a, d, e}


def test_nothing_used_within_the_last_hour_is_evicted(make_store: Any, clock: Any) -> None:
    store = make_store(max_total_size=2 * KB, max_age_days=0.01)
    refs = [store.put(blob(n)) for n in range(4)]
    clock.advance(HOUR - 1)
    report = store.gc()
    assert report.evicted == []
    assert report.over_limit
    assert refs_of(store) == set(refs)
    store.grep(refs[0], "0000")  # read again: a fresh hour for this one
    clock.advance(2)
    report = store.gc()
    assert {ref for ref, _, _ in report.evicted} == set(refs[1:])
    assert refs_of(store) == {refs[0]}
    assert not report.over_limit


def test_size_eviction_in_gc_goes_oldest_first_down_to_the_cap(
    make_store: Any, clock: Any
) -> None:
    store = make_store(max_total_size=None, max_age_days=None)
    refs = []
    for n in range(5):
        refs.append(store.put(blob(n)))
        clock.advance(HOUR)
    clock.advance(HOUR)
    # The limit is lowered afterwards (a configuration change): gc applies it.
    store.limits = dataclasses.replace(store.limits, max_total_size=2 * KB + 100)
    capped = store
    report = capped.gc()
    assert [(ref, why) for ref, _, why in report.evicted] == [(r, "size") for r in refs[:3]]
    assert refs_of(capped) == set(refs[3:])
    assert report.freed == 3 * KB


def test_gc_dry_run_reports_without_removing(make_store: Any, clock: Any) -> None:
    store = make_store(max_age_days=1)
    ref = store.put(blob(1))
    clock.advance(2 * DAY)
    report = store.gc(dry_run=True)
    assert report.dry_run
    assert report.evicted == [(ref, KB, "age")]
    assert refs_of(store) == {ref}
    assert report.to_dict()["freed"] == KB
    assert store.gc().evicted == [(ref, KB, "age")]
    assert refs_of(store) == set()


def test_an_artifact_over_the_largest_size_keeps_its_head_and_tail(make_store: Any) -> None:
    store = make_store(max_artifact_size=100)
    data = b"".join(b"line %03d\n" % n for n in range(100))  # 900 bytes, 9 per line
    ref = store.put(data, tool="Bash")
    assert ref == reference_of(data)
    info = store.stat(ref)
    assert (info.partial, info.original_bytes, info.lines, info.tool) == (True, 900, 100, "Bash")
    stored = store.read_bytes(ref)
    assert info.bytes == len(stored) <= 100
    head = info.head_bytes
    assert head is not None
    assert stored[:head] == data[:head] and stored[:head].endswith(b"\n")
    assert data.endswith(stored[head:]) and stored[head:].startswith(b"line")


def test_an_artifact_at_the_largest_size_is_kept_whole(make_store: Any) -> None:
    store = make_store(max_artifact_size=100)
    ref = store.put(b"x" * 100)
    assert not store.stat(ref).partial
    assert store.read_bytes(ref) == b"x" * 100


@given(
    data=st.binary(min_size=0, max_size=600) | st.text(alphabet="ab\n", max_size=600).map(
        str.encode),
    limit=st.one_of(st.none(), st.integers(2, 300)),
    sizes=st.lists(st.integers(1, 400), min_size=1, max_size=8),
)
@settings(deadline=None, derandomize=True, max_examples=150)
def test_a_streamed_write_stores_what_a_one_shot_put_stores(
    data: bytes, limit: int | None, sizes: list[int]
) -> None:
    limits = StoreLimits(max_artifact_size=limit, minimum=1)
    whole = MemoryStore(limits=limits)
    streamed = MemoryStore(limits=limits)
    writer = streamed.open_writer(tool="t")
    pos = 0
    for index in range(len(data)):
        size = sizes[index % len(sizes)]
        if pos >= len(data):
            break
        writer.write(data[pos : pos + size])
        pos += size
    ref = writer.commit()
    assert ref == whole.put(data, tool="t")
    expected, got = whole.stat(ref), streamed.stat(ref)
    assert (got.bytes, got.partial, got.head_bytes, got.lines, got.original_bytes) == (
        expected.bytes, expected.partial, expected.head_bytes, expected.lines,
        expected.original_bytes)
    assert streamed.read_bytes(ref) == whole.read_bytes(ref)


def test_a_long_stream_never_uses_more_disk_than_the_largest_artifact(tmp_path: Path) -> None:
    limit = 256 * KB
    store = LocalStore(tmp_path / "s", limits=StoreLimits(max_artifact_size=limit), fsync=False)
    spool_dir = tmp_path / "s" / ".tmp"
    chunk = os.urandom(64 * KB).replace(b"\n", b" ")  # no line break to snap the cut to
    digest = hashlib.sha256()
    peak = 0
    with store.open_writer() as writer:
        for _ in range(512):  # 32 MB through a 256 KB artifact
            writer.write(chunk)
            digest.update(chunk)
            peak = max(peak, sum(p.stat().st_size for p in spool_dir.iterdir()))
    assert peak <= limit + len(chunk)
    assert writer.ref == format_ref(digest.hexdigest())
    info = store.stat(writer.ref)
    assert info.partial and info.original_bytes == 512 * len(chunk) and info.bytes == limit
    assert store.read_bytes(writer.ref, info.bytes - len(chunk)) == chunk


@pytest.mark.parametrize(
    ("limits", "key"),
    [
        ({"max_artifact_size": 0}, "store.max_artifact_size"),
        ({"max_artifact_size": 100}, "store.max_artifact_size"),
        ({"max_total_size": "lots"}, "store.max_total_size"),
        ({"max_age_days": -1}, "store.max_age_days"),
        ({"max_age_days": 0}, "store.max_age_days"),
        ({"max_age_days": True}, "store.max_age_days"),
    ],
)
def test_invalid_limits_are_refused_naming_the_key(limits: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        StoreLimits(**limits)
    # A configuration file is held to exactly the same rule.
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        Config.from_mapping({"store": limits})


def test_limits_accept_sizes_as_text() -> None:
    limits = StoreLimits.from_mapping(
        {"max_artifact_size": "1.5KB", "max_total_size": "unlimited", "max_age_days": "unlimited"}
    )
    assert limits == StoreLimits(max_artifact_size=1536, max_total_size=None, max_age_days=None)
    assert MemoryStore(limits=limits).limits is limits
    assert MemoryStore().limits.max_total_size == 2 * 1024**3


def test_limits_below_one_kilobyte_need_an_explicit_minimum() -> None:
    assert StoreLimits(max_artifact_size=100, minimum=1).max_artifact_size == 100
    with pytest.raises(ConfigError, match="below the minimum of 200"):
        StoreLimits(max_artifact_size=100, minimum=200)
