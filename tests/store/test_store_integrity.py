"""Artifacts are what their reference says: damage is found on read, reported, healed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolcap import StoreError
from toolcap.store import (
    ArtifactNotFoundError,
    ArtifactStore,
    DamagedArtifactError,
    FsspecStore,
    LocalStore,
    MemoryStore,
    StoreLimits,
)

DATA = b"".join(b"line %05d of a tool output\n" for n in range(2000))  # 54 KB


def damage(store: ArtifactStore, ref: str, stored: bytes) -> None:
    """Replace what the store holds under ``ref`` behind its back (its record stays)."""
    ident = ref.removeprefix("toolcap:")
    if isinstance(store, MemoryStore):
        store.data[ident] = stored
    elif isinstance(store, LocalStore):
        Path(store.path_of(ref)).write_bytes(stored)
    else:
        assert isinstance(store, FsspecStore)
        store.fs.pipe_file(store._key(ident), stored)


def altered(data: bytes) -> bytes:
    """The same length, one byte different."""
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1 :]


def test_a_truncated_artifact_is_an_error_naming_it_on_every_read(store: ArtifactStore) -> None:
    ref = store.put(DATA)
    damage(store, ref, DATA[:1000])
    with pytest.raises(DamagedArtifactError, match=f"{ref} is damaged .*1000 bytes stored, "
                       f"{len(DATA)} recorded") as caught:
        store.read_bytes(ref, 10, 20)  # a range inside what is left: still refused
    assert caught.value.ref == ref
    assert isinstance(caught.value, StoreError)
    # Removed, so that nothing serves the damaged bytes under that name any more.
    with pytest.raises(ArtifactNotFoundError):
        store.stat(ref)


@pytest.mark.parametrize("read", ["read_bytes", "stat", "read_lines", "grep", "verify"])
def test_every_read_checks_the_stored_size_first(store: ArtifactStore, read: str) -> None:
    ref = store.put(DATA)
    damage(store, ref, DATA + b"appended\n")
    calls = {
        "read_bytes": lambda: store.read_bytes(ref),
        "stat": lambda: store.stat(ref),
        "read_lines": lambda: store.read_lines(ref, 1, 1),
        "grep": lambda: store.grep(ref, "line 00001"),
        "verify": lambda: store.verify(ref),
    }
    with pytest.raises(DamagedArtifactError, match=ref):
        calls[read]()


def test_an_altered_artifact_fails_a_whole_read_and_verify(store: ArtifactStore) -> None:
    ref = store.put(DATA)
    damage(store, ref, altered(DATA))
    # A short range cannot be checked cheaply against the hash of the whole ...
    assert store.read_bytes(ref, 0, 10) == DATA[:10]
    # ... a whole read can, and is.
    with pytest.raises(DamagedArtifactError, match=f"{ref} is damaged .*do not match its hash"):
        store.read_bytes(ref)
    second = store.put(DATA + b"x")
    damage(store, second, altered(DATA + b"x"))
    with pytest.raises(DamagedArtifactError, match=second):
        store.verify(second)
    third = store.put(DATA + b"y")
    damage(store, third, altered(DATA + b"y"))
    with pytest.raises(DamagedArtifactError, match=third):
        store.read_lines(third, 1)  # to the end: every line read, so the hash is checked


def test_verify_returns_the_record_of_an_intact_artifact_and_does_not_count_as_a_read(
    store: ArtifactStore,
) -> None:
    ref = store.put(DATA)
    before = store.stat(ref).last_read
    info = store.verify(ref)
    assert (info.ref, info.bytes) == (ref, len(DATA))
    assert store.stat(ref).last_read == before


@pytest.mark.parametrize("how", ["truncated", "altered"])
def test_the_next_put_of_the_same_content_heals_a_damaged_artifact(
    store: ArtifactStore, how: str
) -> None:
    ref = store.put(DATA)
    damage(store, ref, DATA[:500] if how == "truncated" else altered(DATA))
    if how == "altered":  # same size: found by the next whole read, which removes it
        with pytest.raises(DamagedArtifactError):
            store.read_bytes(ref)
    assert store.put(DATA) == ref
    assert store.read_bytes(ref) == DATA
    assert store.verify(ref).bytes == len(DATA)


def test_a_truncated_artifact_is_healed_by_a_put_even_before_any_read(
    store: ArtifactStore,
) -> None:
    ref = store.put(DATA)
    damage(store, ref, b"")
    assert store.put(DATA) == ref
    assert store.read_bytes(ref) == DATA


def test_a_streamed_put_heals_too(store: ArtifactStore) -> None:
    ref = store.put(DATA)
    damage(store, ref, DATA[:7])
    with store.open_writer() as writer:
        writer.write(DATA[:100])
        writer.write(DATA[100:])
    assert writer.ref == ref
    assert store.read_bytes(ref) == DATA


@pytest.mark.parametrize("streamed", [False, True])
def test_a_partial_artifact_is_checked_against_the_hash_of_what_it_stores(
    tmp_path: Path, streamed: bool
) -> None:
    store = MemoryStore(limits=StoreLimits(max_artifact_size=4096))
    if streamed:
        with store.open_writer() as writer:
            for start in range(0, len(DATA), 999):
                writer.write(DATA[start : start + 999])
        ref = writer.ref
        assert ref is not None
    else:
        ref = store.put(DATA)
    info = store.stat(ref)
    assert info.partial and info.stored_sha256 is not None
    kept = store.read_bytes(ref)
    assert hashlib.sha256(kept).hexdigest() == info.stored_sha256
    damage(store, ref, altered(kept))
    with pytest.raises(DamagedArtifactError, match=ref):
        store.verify(ref)


def test_a_proxy_read_of_a_damaged_artifact_is_an_error_result_naming_it(
    store: ArtifactStore,
) -> None:
    from toolcap.proxy._artifact import read_artifact_result

    ref = store.put(DATA)
    damage(store, ref, DATA[:-1])
    answer = read_artifact_result(store, {"ref": ref})
    assert answer["isError"] is True
    assert f"{ref} is damaged" in answer["content"][0]["text"]


@given(
    data=st.binary(min_size=1, max_size=3000),
    limit=st.one_of(st.none(), st.integers(2, 1500)),
    how=st.sampled_from(["truncate", "extend", "flip"]),
    where=st.integers(0, 10**6),
)
@settings(deadline=None, derandomize=True, max_examples=300)
def test_any_change_to_what_is_stored_is_found_and_healed(
    data: bytes, limit: int | None, how: str, where: int
) -> None:
    store = MemoryStore(limits=StoreLimits(max_artifact_size=limit, minimum=1))
    ref = store.put(data)
    ident = ref.removeprefix("toolcap:")
    kept = store.data[ident]
    assume(kept)
    at = where % len(kept)
    if how == "truncate":
        changed = kept[:at]
    elif how == "extend":
        changed = kept + bytes([where % 256])
    else:
        changed = kept[:at] + bytes([kept[at] ^ (1 << (where % 8))]) + kept[at + 1 :]
    store.data[ident] = changed
    with pytest.raises(DamagedArtifactError, match=ref):
        store.verify(ref)
    assert store.put(data) == ref
    assert store.read_bytes(ref) == kept
