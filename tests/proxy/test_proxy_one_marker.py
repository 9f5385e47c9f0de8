"""Through the real proxy over stdio: a result cut by its threshold and by the wire
budget (both 64 KB, as in the README's git example) carries one truthful marker."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from helpers import reference_of
from proxy.proxy_helpers import (
    BIGSERVER,
    Client,
    base_env,
    json_text_size,
    load_bigserver,
    proxy_argv,
    write_config,
)
from toolcap import human_size

KB = 1024
CONFIG = '[tools]\nbig_text = "64KB"\n'  # equal to the default wire budget
MARKER = re.compile(r"\n\[toolcap: output truncated, kept (.+?) of (.+?); full output: "
                    r"(toolcap:[0-9a-f]+)\. Narrow the query[^\]]*\]\n")


@pytest.fixture(scope="module")
def client(portal: BlockingPortal, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("one_marker")
    config = write_config(home / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, base_env(home / "store", config), home / "stderr.log") as connected:
        yield connected


def test_a_threshold_and_a_wire_cut_leave_one_marker_with_the_true_sizes(
    client: Client, tmp_path: Path
) -> None:
    tag = '+\t"diff"\\'  # quotes, a tab and a backslash on every line: JSON grows
    size = 4_600_000
    result = client.call("big_text", {"size": size, "tag": tag})
    (block,) = result.content
    text = block.text  # type: ignore[union-attr]
    assert json_text_size(text) <= 64 * KB and len(text.encode()) <= 64 * KB
    markers = list(MARKER.finditer(text))
    assert len(markers) == 1, [m.group() for m in markers]
    (marker,) = markers
    original = load_bigserver().numbered_text(size, tag)
    head, tail = text[: marker.start()], text[marker.end():]
    assert original.startswith(head + "\n") and original.endswith("\n" + tail)
    assert marker[2] == "4.3 MB" == human_size(len(original.encode()))
    assert marker[1] == human_size(len((head + tail).encode()))
    assert marker[3] == reference_of(original.encode())
