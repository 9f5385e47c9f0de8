"""The fsspec store against a real S3 protocol server on loopback (moto), across processes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

from helpers import TcpRelay  # noqa: E402
from moto_s3 import BUCKET, CREDENTIALS, env_with, moto_s3  # noqa: E402


class CountingProxy(TcpRelay):
    """A TCP relay on loopback that counts the bytes the server sends back."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._lock = threading.Lock()
        self._served = 0
        super().__init__(target)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def served(self) -> int:
        with self._lock:
            return self._served

    def reset(self) -> None:
        with self._lock:
            self._served = 0

    def passes(self, data: bytes, answer: bool) -> bool:
        if answer:  # counted before it is relayed, so a reader never outruns the count
            with self._lock:
                self._served += len(data)
        return True


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """A moto S3 server on 127.0.0.1 (port chosen by the OS) with one bucket."""
    with moto_s3() as server:
        yield server


@pytest.fixture
def url() -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex}/artifacts"


def text_of(size: int) -> str:
    return "".join(f"{n:08d} some tool output, line after line\n" for n in range(size // 45))


WRITER = """
import json, sys
from toolcap import Config, Policy, ToolResponse
tools = {"*": {"size_threshold": "4KB"}}
config = Config.from_mapping({"artifacts": sys.argv[1], "tools": tools})
lines = int(sys.argv[2]) // 45
text = "".join(f"{n:08d} some tool output, line after line\\n" for n in range(lines))
[result] = Policy(config, notices=False).finalize([ToolResponse("Bash", text)])
out = {"artifacts": result.artifacts, "text": result.text, "not_kept": result.not_kept}
print(json.dumps(out))
"""


def s3_store(s3: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The store at ``url`` on the test server, opened in this process."""
    for key, value in env_with(AWS_ENDPOINT_URL=s3["endpoint"]).items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    from toolcap.store import FsspecStore, open_store

    store = open_store(url)
    assert isinstance(store, FsspecStore)
    return store


def test_one_process_spills_through_finalize_another_reads_it_back_with_the_cli(
    s3: dict[str, str], url: str, toolcap: Any
) -> None:
    size = 2 * 1024 * 1024
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, url, str(size)], capture_output=True, timeout=120,
        env=env_with(FSSPEC_S3_ENDPOINT_URL=s3["endpoint"]), check=False,
    )
    assert writer.returncode == 0, writer.stderr.decode()
    result = json.loads(writer.stdout)
    (ref,) = result["artifacts"]
    assert ref in result["text"]  # the marker names the artifact
    assert len(result["text"].encode()) <= 4096
    original = text_of(size).encode()

    proxy = CountingProxy((s3["host"], int(s3["port"])))
    try:
        reader_env = env_with(AWS_ENDPOINT_URL=proxy.url)  # botocore's own variable this time
        whole = toolcap("artifacts", "cat", ref, "--artifacts", url, env=reader_env)
        assert whole.returncode == 0, whole.stderr.decode()
        assert whole.stdout == original
        assert proxy.served >= len(original)

        proxy.reset()
        offset = len(original) // 2 + 7
        part = toolcap("artifacts", "cat", ref[:24], "--offset", str(offset), "--length", "4096",
                       "--artifacts", url, env=reader_env)
        assert part.returncode == 0, part.stderr.decode()
        assert part.stdout == original[offset : offset + 4096]
        # Only the range crossed the wire (plus headers and the small metadata record).
        assert proxy.served < 64 * 1024 < len(original) // 10

        proxy.reset()
        lines = toolcap("artifacts", "grep", ref, "^00000003 ", "--artifacts", url,
                        env=reader_env)
        line = "00000003 some tool output, line after line"
        offset = 3 * (len(line) + 1)  # the byte offset of the match: three lines before it
        assert lines.stdout.decode() == f"4:{offset}:{line}\n"
    finally:
        proxy.close()


def test_the_s3_store_round_trips_lists_and_deletes_in_process(
    s3: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = s3_store(s3, url, monkeypatch)
    data = b"\x00\xffnot utf-8\n" * 1000
    ref = store.put(data, tool="Read")
    assert store.put(data) == ref
    assert store.read_bytes(ref) == data
    assert store.read_bytes(ref, len(data) - 3, 10) == data[-3:]
    assert store.read_bytes(ref, len(data), 10) == b""
    writer = store.open_writer(tool="cap")
    for _ in range(10):
        writer.write(b"streamed\n")
    streamed = writer.commit()
    assert store.read_lines(streamed, 10) == ["streamed"]
    assert {info.ref for info in store.list_artifacts()} == {ref, streamed}
    assert store.stat(ref).location == f"s3://{url[5:]}/{ref[8:10]}/{ref[8:]}"
    store.delete(ref)
    assert [info.ref for info in store.list_artifacts()] == [streamed]


def test_an_unreachable_s3_endpoint_raises_store_error(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    from toolcap import StoreError
    from toolcap.store import FsspecStore

    store = FsspecStore(url, storage_options={
        "endpoint_url": f"http://127.0.0.1:{port}",
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2},
    })
    with pytest.raises(StoreError):
        store.put(b"nowhere to go")


def test_a_damaged_s3_artifact_is_reported_by_reads_and_verify_and_healed_by_a_put(
    s3: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch, toolcap: Any
) -> None:
    from toolcap.store import DamagedArtifactError

    store = s3_store(s3, url, monkeypatch)
    data = text_of(200_000).encode()
    ref = store.put(data)
    key = store._key(ref.removeprefix("toolcap:"))
    store.fs.pipe_file(key, data[:1000])  # truncated behind the store's back
    with pytest.raises(DamagedArtifactError, match=f"{ref} is damaged .*1000 bytes stored"):
        store.read_bytes(ref, 0, 10)
    assert store.put(data) == ref  # healed
    assert store.read_bytes(ref) == data

    middle = len(data) // 2
    store.fs.pipe_file(key, data[:middle] + b"X" + data[middle + 1 :])  # same size, altered
    intact = store.put(b"an intact artifact\n")
    checked = toolcap("artifacts", "verify", "--artifacts", url, env=env_with(
        AWS_ENDPOINT_URL=s3["endpoint"]))
    assert checked.returncode == 1, checked.stderr.decode()
    assert checked.stdout.decode() == f"{ref}\tits bytes do not match its hash\n"
    assert store.read_bytes(intact) == b"an intact artifact\n"
    assert store.put(data) == ref
    assert store.read_bytes(ref) == data


def test_the_last_lines_of_a_big_s3_artifact_cross_the_wire_alone(
    s3: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch, toolcap: Any
) -> None:
    store = s3_store(s3, url, monkeypatch)
    text = text_of(16 * 1024 * 1024).encode()  # 16 MB: 16 line marks
    ref = store.put(text)
    total = store.stat(ref).lines
    proxy = CountingProxy((s3["host"], int(s3["port"])))
    try:
        reader_env = env_with(AWS_ENDPOINT_URL=proxy.url)
        lines = toolcap("artifacts", "cat", ref, "--lines", f"{total - 19}:", "--artifacts", url,
                        env=reader_env)
        assert lines.returncode == 0, lines.stderr.decode()
        assert lines.stdout == b"".join(text.splitlines(keepends=True)[-20:])
        # The record and at most two index steps of ranges, not the 16 MB.
        assert proxy.served < 3 * 1024 * 1024 < len(text) // 5
    finally:
        proxy.close()


def test_an_item_near_the_end_of_a_big_s3_json_original_reads_by_pointer_alone(
    s3: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch, toolcap: Any
) -> None:
    store = s3_store(s3, url, monkeypatch)
    items = [{"id": i, "name": f"ïtem {i}", "tags": ["a", "b"]} for i in range(200_000)]
    document = json.dumps({"count": len(items), "items": items}, ensure_ascii=False).encode()
    assert len(document) > 8 * 1024 * 1024
    ref = store.put(document)
    assert store.stat(ref).json_index is not None
    proxy = CountingProxy((s3["host"], int(s3["port"])))
    try:
        reader_env = env_with(AWS_ENDPOINT_URL=proxy.url)
        part = toolcap("artifacts", "cat", ref, "--pointer", "/items/199998", "--artifacts", url,
                       env=reader_env)
        assert part.returncode == 0, part.stderr.decode()
        assert json.loads(part.stdout) == items[199998]
        # The record (its index) and one index step of bytes, not the whole document.
        assert proxy.served < 1024 * 1024 < len(document) // 8
    finally:
        proxy.close()
