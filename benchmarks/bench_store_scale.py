"""The store at scale: big artifacts read by line, puts into a full store, S3.

    python benchmarks/bench_store_scale.py [--dir DIR] [--quick] [--only lines,puts]

Rows of issue 14 (items 4 to 6), each with its goal beside it:

- lines: the last 20 lines of a 1 GB artifact read by line vs the whole artifact
  read (local directory, and S3 on a moto server on loopback, by range requests).
  Goal: at least 100x cheaper.
- puts: the mean latency of a put (fsync off, default limits, so the total-size
  check runs) into a store holding 10,000 artifacts vs one holding 10; and of a
  put into a full store, so that every put evicts the least recently used.
  Goal: within 1.5x.
- s3list: the requests (and time) of listing an S3 store of 10,000 artifacts, as
  ``toolcap artifacts ls`` does, and of a ``gc`` of it. Goal: requests that grow
  with pages of a listing (1,000 keys), not with artifacts.

It uses only public API, so the same script measures an older checkout
(``PYTHONPATH=old/src python benchmarks/bench_store_scale.py``) for "before".
Timings are the best of several runs, in the same process, one after the other.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from toolcap.store import ArtifactStore, LocalStore, StoreLimits

MB = 1 << 20
UNLIMITED = StoreLimits(max_artifact_size=None, max_total_size=None)
Row = tuple[str, str, str]  # case, measured, goal


def best(runs: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def lines_of(size: int) -> bytes:
    """``size`` bytes of numbered lines of varied length (a block repeated)."""
    block = b"".join(b"%09d " % n + b"tool output " * (n % 7) + b"\n" for n in range(20_000))
    whole = block * (size // len(block) + 1)
    return whole[:size]


def last_lines_row(store: ArtifactStore, size: int, where: str, runs: int) -> Row:
    ref = store.put(lines_of(size))
    total = store.stat(ref).lines

    def whole() -> None:
        for _ in store.iter_bytes(ref):
            pass

    by_line = best(runs, lambda: store.read_lines(ref, total - 19, total))
    read_all = best(max(1, runs // 3), whole)
    return (f"20 last lines of a {size // MB} MB artifact ({where}) vs a whole read",
            f"{by_line * 1e3:.1f} ms vs {read_all * 1e3:.0f} ms: "
            f"{read_all / by_line:,.0f}x cheaper",
            ">= 100x cheaper")


def bench_lines(work: Path, size: int, s3_size: int, runs: int) -> list[Row]:
    rows = [last_lines_row(LocalStore(work / "lines", fsync=False, limits=UNLIMITED), size,
                           "local", runs)]
    with moto_s3() as endpoint:
        store = s3_store(endpoint, UNLIMITED)
        rows.append(last_lines_row(store, s3_size, "S3, moto", runs))
    return rows


def put_latency(root: Path, count: int, probes: int) -> float:
    """Mean seconds of a 1 KB put (default limits) into a store of ``count`` artifacts."""
    filler = LocalStore(root, fsync=False, limits=UNLIMITED)
    for n in range(count):
        filler.put(b"%09d filler\n" % n)
    store = LocalStore(root, fsync=False)  # default limits: the total is checked on each put
    payloads = [b"%09d probe " % n + os.urandom(1000) for n in range(probes + 5)]
    for payload in payloads[:5]:  # the process's first puts: directories, journal
        store.put(payload)
    start = time.perf_counter()
    for payload in payloads[5:]:
        store.put(payload)
    return (time.perf_counter() - start) / probes


def evicting_put_latency(root: Path, count: int, probes: int) -> float:
    """Mean seconds of a 1 KB put into a full store of ``count`` artifacts: each put evicts.

    The fillers were written two hours ago, a thousand a second; each probe
    evicts one of them. A store smaller than ``probes`` is filled again for
    each round of ``count`` probes, and only the probes are timed.
    """
    elapsed = 0.0
    rounds = max(1, probes // count)
    for run in range(rounds):
        where = root / f"round-{run}"
        ticks = (time.time() - 2 * 3600 + n / 1000 for n in itertools.count())
        filler = LocalStore(where, fsync=False, limits=UNLIMITED, clock=ticks.__next__)
        for n in range(count):
            filler.put(b"%09d filler " % n + b"f" * 1000)
        total = filler.stored_total() or 0
        store = LocalStore(where, fsync=False, limits=StoreLimits(max_total_size=total))
        store.put(b"the process's first put: directories, journal, index " + b"p" * 960)
        payloads = [b"%09d probe " % n + os.urandom(1000) for n in range(min(probes, count) - 1)]
        start = time.perf_counter()
        for payload in payloads:
            store.put(payload)
        elapsed += time.perf_counter() - start
        assert len(store.scan()) <= count, "the puts did not evict"
    return elapsed / (rounds * (min(probes, count) - 1))


def bench_puts(work: Path, sizes: tuple[int, int], probes: int, runs: int) -> list[Row]:
    rows = []
    for what, measure in (("put", put_latency), ("put that evicts", evicting_put_latency)):
        small, large = (
            min(measure(work / f"{measure.__name__}-{count}-{run}", count, probes)
                for run in range(runs))
            for count in sizes
        )
        rows.append((f"{what} (fsync off) into {sizes[1]:,} artifacts vs into {sizes[0]:,}",
                     f"{large * 1e3:.2f} ms vs {small * 1e3:.2f} ms: {large / small:.2f}x",
                     "<= 1.5x"))
    return rows


def bench_s3_list(count: int, runs: int) -> list[Row]:
    """`list_artifacts` (what `toolcap artifacts ls` runs) and `gc` of ``count`` S3 artifacts."""
    from concurrent.futures import ThreadPoolExecutor

    with moto_s3() as endpoint:
        store = s3_store(endpoint, UNLIMITED)
        with ThreadPoolExecutor(8) as pool:  # filling takes three requests an artifact
            list(pool.map(lambda n: store.put(b"%09d listed\n" % n, tool="Bash"), range(count)))
        with counted_requests() as sent:
            listed = best(runs, lambda: len(store.list_artifacts()))
        per_run = len(sent) // runs
        with counted_requests() as sent:
            store.gc()
        return [
            (f"list of an S3 store (moto) of {count:,} artifacts",
             f"{per_run} requests, {listed:.2f} s", "grows with pages (1,000 keys), not artifacts"),
            (f"gc of an S3 store (moto) of {count:,} artifacts, nothing to evict",
             f"{len(sent)} requests", "grows with pages, not artifacts"),
        ]


@contextlib.contextmanager
def counted_requests() -> Iterator[list[str]]:
    """The HTTP requests this process's S3 clients send meanwhile."""
    from aiobotocore.endpoint import AioEndpoint  # type: ignore[import-untyped]

    sent: list[str] = []
    original = AioEndpoint._send

    async def counting(self: object, request: object) -> object:
        sent.append(str(getattr(request, "method", "?")))
        return await original(self, request)

    AioEndpoint._send = counting
    try:
        yield sent
    finally:
        AioEndpoint._send = original


# ------------------------------------------------------------------ S3 (moto)
@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """A moto S3 server on loopback with bucket ``bench``; yields its endpoint."""
    import logging

    import boto3  # type: ignore[import-untyped]
    from moto.server import ThreadedMotoServer  # type: ignore[import-untyped]

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ENDPOINT_URL": endpoint}.items():
        os.environ[key] = value
    client = boto3.client("s3")
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):  # moto's state is
        client.create_bucket(  # per process: a server started before made it already
            Bucket="bench", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    with contextlib.suppress(ImportError):  # fsspec keeps file systems made for another server
        from s3fs import S3FileSystem  # type: ignore[import-untyped]

        S3FileSystem.clear_instance_cache()
    try:
        yield endpoint
    finally:
        server.stop()


def s3_store(endpoint: str, limits: StoreLimits) -> ArtifactStore:
    from toolcap.store import FsspecStore

    return FsspecStore(f"s3://bench/{uuid.uuid4().hex}", limits=limits,
                       storage_options={"endpoint_url": endpoint})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write (default: the system temp dir)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs")
    parser.add_argument("--only", default="lines,puts,s3list", help="comma-separated sections")
    parser.add_argument("--size", type=int, help="MB of the local artifact (default 1024)")
    parser.add_argument("--s3-size", type=int, help="MB of the S3 artifact (default 1024)")
    parser.add_argument("--runs", type=int, help="timed runs of each case (best is shown)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    quick = args.quick
    work = Path(tempfile.mkdtemp(prefix="toolcap-bench-", dir=args.dir))
    rows: list[Row] = []
    try:
        runs = args.runs or (2 if quick else 3)
        if "lines" in only:
            size = (args.size or (100 if quick else 1024)) * MB
            s3_size = (args.s3_size or (64 if quick else 1024)) * MB
            rows += bench_lines(work, size, s3_size, runs)
        if "puts" in only:
            rows += bench_puts(work, (10, 2_000 if quick else 10_000), 200, runs)
        if "s3list" in only:
            rows += bench_s3_list(1_000 if quick else 10_000, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(case) for case, _, _ in rows)
    size = max(len(measured) for _, measured, _ in rows)
    print(f"{'case':<{width}}  {'measured':<{size}}  goal")
    for case, measured, goal in rows:
        print(f"{case:<{width}}  {measured:<{size}}  {goal}")


if __name__ == "__main__":
    main()
