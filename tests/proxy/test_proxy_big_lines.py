"""Big results through `toolcap proxy`: read by the scanner's fast path or, where it
declines, by the plain parse; either way bounded with the exact original kept."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from helpers import reference_of
from proxy.proxy_helpers import (
    BIGSERVER,
    REF,
    Client,
    base_env,
    open_store,
    proxy_argv,
    text_of,
    write_config,
)

THRESHOLD = 32 * 1024


@pytest.fixture(scope="module")
def client(
    portal: BlockingPortal, artifacts: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    home = tmp_path_factory.mktemp("biglines")
    config = write_config(home / "toolcap.toml", '[tools."*"]\nsize_threshold = "32KB"\n')
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, base_env(artifacts, config), home / "stderr.log") as connected:
        yield connected


def _bounded_with_original(client: Client, artifacts: Path, unit: str, times: int) -> None:
    original = unit * times
    result = client.call("repeated", {"unit": unit, "times": times})
    (text,) = text_of(result)
    assert len(text.encode()) <= THRESHOLD
    assert original.startswith(text[:200])
    (ref,) = REF.findall(text)
    assert ref == reference_of(original.encode())
    assert open_store(artifacts).read_bytes(ref) == original.encode()


@pytest.mark.parametrize(
    "unit",
    [
        "emoji 😀 and 漢字, a tab\t, a quote \" and a backslash \\ \n",
        "\\\\\\\"\\u0041 not an escape \ud7ff \U0001f600\n",
        "a\x00b\x1fc\x7f\u2028\u2029\n",
    ],
    ids=["astral-and-cjk", "escapes-as-text", "controls"],
)
def test_a_big_text_with_escapes_is_bounded_and_kept_exactly(
    client: Client, artifacts: Path, unit: str
) -> None:
    _bounded_with_original(client, artifacts, unit, 2_000_000 // len(unit.encode()) + 1)


def test_a_big_json_text_the_scanner_declines_is_bounded_and_kept_exactly(
    client: Client, artifacts: Path
) -> None:
    unit = json.dumps({"name": "item", "tags": ["a", "b"], "ok": True}) + "\n"
    _bounded_with_original(client, artifacts, unit, 2_000_000 // len(unit) + 1)
