"""The public protocols: a store plugs into the seam, streaming and the proxy through them."""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcap import Config, Policy, ToolResponse
from toolcap.proxy._artifact import read_artifact_result
from toolcap.shell._spill import open_stream
from toolcap.store import ArtifactStore, LocalStore, MemoryStore, StoreBackend

BIG = "".join(f"line {n}\n" for n in range(20_000))  # ~200 KB: over every default bound


@pytest.fixture(params=["memory", "local", "fsspec"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ArtifactStore]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "local":
        yield LocalStore(tmp_path / "artifacts", fsync=False)
    else:
        pytest.importorskip("fsspec")
        from toolcap.store import FsspecStore

        made = FsspecStore(f"memory://protocols/{uuid.uuid4().hex}")
        yield made
        with contextlib.suppress(FileNotFoundError):
            made.fs.rm(made.url.removeprefix("memory://"), recursive=True)


def test_a_store_serves_the_finalizer_streaming_and_the_proxy(store: ArtifactStore) -> None:
    policy = Policy(Config(), sink=store, notices=False)
    # The finalizer keeps the original through ArtifactSink.put ...
    [done] = policy.finalize([ToolResponse("Bash", BIG)])
    assert done.artifacts is not None and len(done.artifacts) == 1
    ref = done.artifacts[0]
    # ... the proxy reads it back through ArtifactReader ...
    answer = read_artifact_result(store, {"ref": ref, "start_line": 2, "end_line": 3})
    assert answer["content"][0]["text"] == "line 1\nline 2\n"
    # ... and a stream is kept through StreamingArtifactSink.open_writer, same reference.
    stream = open_stream(policy, "Bash")
    for start in range(0, len(BIG), 7000):
        stream.write(BIG[start : start + 7000].encode())
    outcome = stream.close()
    assert outcome.reference == ref == "toolcap:" + hashlib.sha256(BIG.encode()).hexdigest()[:32]


class _PutOnly:
    """A sink of one's own that takes whole values only."""

    def __init__(self) -> None:
        self.kept: dict[str, bytes] = {}

    def put(self, data: bytes, *, tool: str | None = None) -> str:
        ref = "toolcap:" + hashlib.sha256(data).hexdigest()[:32]
        self.kept[ref] = data
        return ref


def test_a_sink_that_only_puts_keeps_whole_values_and_says_why_it_keeps_no_stream() -> None:
    sink = _PutOnly()
    policy = Policy(Config(), sink=sink, notices=False)
    [done] = policy.finalize([ToolResponse("Bash", BIG)])
    assert done.artifacts is not None and sink.kept[done.artifacts[0]] == BIG.encode()
    stream = open_stream(policy, "Bash")
    stream.write(BIG.encode())
    outcome = stream.close()
    assert outcome.reference is None
    assert outcome.not_kept is not None and "takes no streams" in outcome.not_kept
    # Nor can the proxy read from it: it says so instead of failing.
    answer = read_artifact_result(sink, {"ref": done.artifacts[0]})
    assert answer["isError"] is True
    assert "no artifact store" in answer["content"][0]["text"]


def test_a_backend_implements_only_a_handful_of_primitives() -> None:
    assert ArtifactStore.__abstractmethods__ == StoreBackend.__abstractmethods__ == {
        "location", "publish", "exists", "scan", "load_info", "read_range", "object_size",
        "touch", "remove",
    }
