"""Media blocks in every SDK's spelling are measured, kept whole and replaced by a note."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from toolcap import Config, Policy
from toolcap.adapters._common import Result, bound_contents
from toolcap.store import MemoryStore

DATA = bytes(range(256)) * 1200  # 300 KB: its base64 (400 KB) is over 256 KB
B64 = base64.b64encode(DATA).decode()
URL = "data:image/png;base64," + B64

SHAPES: dict[str, tuple[Any, bytes]] = {
    "anthropic image": ({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                    "data": B64}}, DATA),
    "anthropic pdf": ({"type": "document", "source": {"type": "base64",
                                                      "media_type": "application/pdf",
                                                      "data": B64}}, DATA),
    "anthropic text document": ({"type": "document", "source": {
        "type": "text", "media_type": "text/plain", "data": "é" * 200_000}},
        ("é" * 200_000).encode()),
    "langchain v1 image": ({"type": "image", "base64": B64, "mime_type": "image/png"}, DATA),
    "langchain v0.3 image": ({"type": "image", "source_type": "base64", "data": B64,
                              "mime_type": "image/png"}, DATA),
    "openai chat image_url": ({"type": "image_url", "image_url": {"url": URL}}, DATA),
    "openai responses input_image": ({"type": "input_image", "image_url": URL}, DATA),
    "openai responses input_file": ({"type": "input_file", "filename": "a.pdf",
                                     "file_data": "data:application/pdf;base64," + B64}, DATA),
    "openai input_audio": ({"type": "input_audio", "input_audio": {"data": B64,
                                                                   "format": "wav"}}, DATA),
    "mcp image": ({"type": "image", "data": B64, "mimeType": "image/png"}, DATA),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_media_over_the_threshold_is_kept_whole_and_named(shape: str) -> None:
    block, payload = SHAPES[shape]
    store = MemoryStore()
    policy = Policy(Config(), sink=store, notices=False)
    [content] = bound_contents([Result("Shot", [block])], policy, io=True)
    [note] = content
    assert note["type"] == "text" and "over the 256.0 KB media limit" in note["text"]
    assert store.read_bytes(note["text"].split("kept as ")[1].rstrip("]")) == payload


@pytest.mark.parametrize("block", [
    {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}},
    {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}},
    {"type": "input_image", "file_id": "file_123"},
    {"type": "image", "base64": B64[:1000], "mime_type": "image/png"},
])
def test_media_by_reference_or_under_the_threshold_passes(block: Any) -> None:
    policy = Policy(Config(), sink=MemoryStore(), notices=False)
    content = [block]
    assert bound_contents([Result("Shot", content)], policy, io=True)[0] is content


def test_unlimited_media_threshold_lets_everything_pass() -> None:
    policy = Policy(Config(media_threshold=None), sink=None, notices=False)
    content = [SHAPES["mcp image"][0]]
    assert bound_contents([Result("Shot", content)], policy, io=False)[0] is content
