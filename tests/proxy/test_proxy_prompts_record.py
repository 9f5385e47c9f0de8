"""prompts/get bounded like a tool result, and the record every cut result carries in
``_meta["toolcap/cut"]``: a real proxy over stdio, the official SDK client, a real server."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

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

THRESHOLD = 16 * 1024
CONFIG = f'media_threshold = "64KB"\n[tools."*"]\nsize_threshold = "{THRESHOLD}"\n'
CUT_KEY = "toolcap/cut"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("prompts")


@pytest.fixture(scope="module")
def client(portal: BlockingPortal, home: Any) -> Iterator[Client]:
    config = write_config(home / "toolcap.toml", CONFIG)
    argv = proxy_argv("--", sys.executable, str(BIGSERVER))
    with Client(portal, argv, base_env(home / "store", config), home / "stderr.log") as connected:
        yield connected


def get_prompt(client: Client, name: str, arguments: dict[str, str]) -> Any:
    assert client.session is not None
    return client.run(client.session.get_prompt, name, arguments)


def record_of(result: Any) -> dict[str, Any]:
    record = (result.meta or {}).get(CUT_KEY)
    assert isinstance(record, dict), result.meta
    return record


def test_a_huge_prompt_is_cut_to_the_threshold_with_its_roles_and_a_marker(client: Client) -> None:
    prompt = get_prompt(client, "big_prompt", {"size": "900000", "image": "300000"})
    assert [m.role for m in prompt.messages] == ["user", "assistant", "user"]
    first, reply, image = (m.content for m in prompt.messages)
    assert len(first.text.encode()) <= THRESHOLD
    assert first.text.startswith("pr 0000000 the quick brown fox")
    assert REF.search(first.text)
    assert reply.text == "Understood."
    # The image over the media threshold became a note naming where it is kept.
    assert image.type == "text"
    assert "image" in image.text and REF.search(image.text)
    assert "prompt:big_prompt: sent" in client.stderr()


def test_the_cut_original_of_a_prompt_reads_back_through_read_artifact(
    client: Client, home: Any
) -> None:
    prompt = get_prompt(client, "big_prompt", {"size": "900000"})
    ref = REF.search(prompt.messages[0].content.text).group(0)
    read = client.call("read_artifact", {"ref": ref, "start_line": 2000, "end_line": 2000})
    expected = load_bigserver().numbered_text(900000, "pr").splitlines()[1999]
    assert text_of(read)[0] == expected + "\n"
    # One artifact holds the prompt's text blocks joined by line breaks, as for a tool.
    assert open_store(home / "store").stat(ref).bytes == 900000 + len("\nUnderstood.")


def test_a_small_prompt_passes_unchanged_without_a_record(client: Client) -> None:
    prompt = get_prompt(client, "big_prompt", {"size": "2000"})
    assert prompt.messages[0].content.text == load_bigserver().numbered_text(2000, "pr")
    assert CUT_KEY not in (prompt.meta or {})


def test_a_cut_prompt_carries_the_record_of_its_cut(client: Client) -> None:
    prompt = get_prompt(client, "big_prompt", {"size": "900000", "image": "300000"})
    record = record_of(prompt)
    assert record["version"] == 1
    assert record["originalBytes"] > 900000 + 300000
    assert record["keptBytes"] < THRESHOLD + 1024
    assert record["limit"] == THRESHOLD
    assert record["cap"] in ("size_threshold", "media_threshold")
    found = (REF.search(getattr(m.content, "text", "") or "") for m in prompt.messages)
    assert set(record["refs"]) == {match.group(0) for match in found if match}
    assert record["ref"] == record["refs"][0]


def test_a_cut_tool_result_carries_the_record_and_its_reference_reads_back(client: Client) -> None:
    result = client.call("big_text", {"size": 300_000})
    record = record_of(result)
    (text,) = text_of(result)
    assert record["ref"] == REF.search(text).group(0)
    assert record["cap"] == "size_threshold"
    assert record["limit"] == THRESHOLD
    assert record["originalBytes"] > 300_000
    content = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
    # The payload measured: the content and its structured twin ({"result": text}), cut too.
    payload = [content, result.structured_content]
    assert record["keptBytes"] == sum(
        len(json.dumps(part, ensure_ascii=False, separators=(",", ":")).encode())
        for part in payload)
    read = client.call("read_artifact", {"ref": record["ref"], "offset": 0, "length": 20})
    assert text_of(read)[0] == "line 0000000 the qui"


def test_an_uncut_tool_result_carries_no_record(client: Client) -> None:
    result = client.call("small", {"text": "hello"})
    assert CUT_KEY not in (result.meta or {})


def test_a_prompt_of_thousands_of_turns_keeps_whole_turns_and_their_roles(
    client: Client, home: Any
) -> None:
    prompt = get_prompt(client, "many_messages", {"count": "2000", "size": "100"})
    markers = [i for i, m in enumerate(prompt.messages) if "are left out here" in m.content.text]
    assert len(markers) == 1
    at = markers[0]
    kept = prompt.messages[:at] + prompt.messages[at + 1:]
    assert len(kept) > 50
    numbers = [int(m.content.text[1:6]) for m in kept]
    assert numbers == sorted(numbers) and numbers[0] == 0 and numbers[-1] == 1999
    for number, message in zip(numbers, kept, strict=True):
        assert message.role == ("user" if number % 2 == 0 else "assistant")
        assert message.content.text == f"m{number:05d} ".ljust(100, "x")
    marker = prompt.messages[at]
    # It stands for messages at+1 to numbers[at] (counted from 1), in the role of the first.
    assert f"messages {at + 1} to {numbers[at]} of 2000" in marker.content.text
    assert marker.role == ("user" if at % 2 == 0 else "assistant")
    record = record_of(prompt)
    assert record["keptBytes"] <= record["limit"] == THRESHOLD
    ref = REF.search(marker.content.text).group(0)
    assert record["ref"] == ref
    stored = open_store(home / "store").read_bytes(ref).decode().split("\n")
    assert stored[1234] == f"m{1234:05d} ".ljust(100, "x")
