"""Two real proxies chained over stdio (client → outer → inner → server): a result is cut
once, carries one marker and one record, and its reference reads back through the outer
proxy's read_artifact, which passes reads of the inner proxy's artifacts on to it."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    Client,
    base_env,
    load_bigserver,
    open_store,
    proxy_argv,
    text_of,
    write_config,
)
from toolcap import human_size, parse_size
from toolcap.store import ArtifactNotFoundError

KB = 1024
# The sizes in the default marker: "kept 3.9 KB of 195.3 KB".
MARKER = re.compile(r"kept (\d+(?:\.\d)? [KMG]?B) of (\d+(?:\.\d)? [KMG]?B)")


def chain(portal: BlockingPortal, home: Path, outer_kb: int, inner_kb: int) -> Client:
    limit = '[tools."*"]\nsize_threshold = "{}KB"\n'
    outer_config = write_config(home / "outer.toml", limit.format(outer_kb))
    inner_config = write_config(home / "inner.toml", limit.format(inner_kb))
    inner = ["env", f"TOOLCAP_CONFIG={inner_config}", f"TOOLCAP_ARTIFACTS={home / 'inner-store'}",
             *proxy_argv("--", sys.executable, str(BIGSERVER))]
    argv = proxy_argv("--", *inner)
    return Client(portal, argv, base_env(home / "outer-store", outer_config), home / "stderr.log")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chain")


@pytest.fixture(scope="module")
def client(portal: BlockingPortal, home: Path) -> Iterator[Client]:
    with chain(portal, home, outer_kb=32, inner_kb=8) as connected:
        yield connected


def test_the_client_sees_one_read_artifact_tool(client: Client) -> None:
    assert client.session is not None
    names = [tool.name for tool in client.run(client.session.list_tools).tools]
    assert names.count("read_artifact") == 1
    assert "big_text" in names


def test_a_result_the_inner_proxy_cut_has_one_marker_and_one_record(
    client: Client, home: Path
) -> None:
    notices_before = client.stderr().count("big_text: sent")
    result = client.call("big_text", {"size": 200_000})
    (text,) = text_of(result)
    assert len(text.encode()) <= 8 * KB
    refs = REF.findall(text)
    assert len(refs) == 1
    record = (result.meta or {})["toolcap/cut"]
    assert record["limit"] == 8 * KB
    assert REF.fullmatch(record["ref"]) and record["ref"] in text
    # Cut once: one notice (the inner proxy's), one artifact (in the inner store).
    # The inner proxy's notice comes through the outer one's stderr relay, which the
    # reply may overtake; the outer proxy's own notice would be printed before its reply.
    stderr = client.stderr_reaching("big_text: sent", notices_before + 1)
    assert stderr.count("big_text: sent") == notices_before + 1
    assert open_store(home / "inner-store").stat(record["ref"]).bytes == 200_000
    with pytest.raises(ArtifactNotFoundError):
        open_store(home / "outer-store").stat(record["ref"])


def test_the_inner_reference_reads_back_through_the_outer_proxy(client: Client) -> None:
    result = client.call("big_text", {"size": 200_000})
    ref = (result.meta or {})["toolcap/cut"]["ref"]
    read = client.call("read_artifact", {"ref": ref, "start_line": 1000, "end_line": 1001})
    lines = load_bigserver().numbered_text(200_000).splitlines()
    assert text_of(read)[0] == lines[999] + "\n" + lines[1000] + "\n"
    assert not read.is_error


def test_a_reference_neither_proxy_holds_is_an_error_result(client: Client) -> None:
    read = client.call("read_artifact", {"ref": "toolcap:" + "0" * 32})
    assert read.is_error
    assert "read_artifact" in text_of(read)[0]


def test_an_outer_proxy_tighter_than_the_inner_one_cuts_to_its_own_limit(
    portal: BlockingPortal, tmp_path: Path
) -> None:
    with chain(portal, tmp_path, outer_kb=4, inner_kb=32) as tight:
        result = tight.call("big_text", {"size": 200_000})
        (text,) = text_of(result)
        assert len(text.encode()) <= 4 * KB
        record = (result.meta or {})["toolcap/cut"]
        assert record["limit"] == 4 * KB
        assert REF.findall(text) == [record["ref"]]
        read = tight.call("read_artifact", {"ref": record["ref"], "offset": 0, "length": 12})
        assert text_of(read)[0] == "line 0000000"


def test_a_second_cut_states_the_true_sizes_and_names_the_original(
    portal: BlockingPortal, tmp_path: Path
) -> None:
    with chain(portal, tmp_path, outer_kb=4, inner_kb=32) as tight:
        assert tight.session is not None
        tight.run(tight.session.list_tools)  # as clients do: the outer proxy meets the reader
        result = tight.call("big_text", {"size": 200_000})
        (text,) = text_of(result)
        record = (result.meta or {})["toolcap/cut"]
        # The marker the model sees: the original's size, not the 32 KB the outer got.
        (marker,) = MARKER.findall(text)
        kept, original = marker
        assert original == human_size(200_000)
        assert parse_size(kept) <= 4 * KB
        # The reference names the original, in the inner proxy's store, read back
        # through the outer proxy.
        assert open_store(tmp_path / "inner-store").stat(record["ref"]).bytes == 200_000
        assert REF.findall(text) == [record["ref"]]
        read = tight.call("read_artifact", {"ref": record["ref"], "start_line": 3000,
                                            "end_line": 3000})
        lines = load_bigserver().numbered_text(200_000).splitlines()
        assert text_of(read)[0] == lines[2999] + "\n"
        # The record: the original's size (the inner proxy's measure), what is sent now.
        assert record["originalBytes"] > 200_000
        assert record["keptBytes"] < 3 * 4 * KB  # the text, and its structured twin
        assert record["limit"] == 4 * KB
