"""The media module: one detection, one measure and one note for every path."""

from __future__ import annotations

import base64

import pytest

from toolcap.core._media import base64_payload, media_of, not_sent_note, resource_media

DATA = bytes(range(256)) * 4
B64 = base64.b64encode(DATA).decode()


@pytest.mark.parametrize(
    ("block", "what"),
    [
        ({"type": "image", "data": B64, "mimeType": "image/png"}, "image image/png"),
        ({"type": "audio", "data": B64}, "audio"),
        ({"type": "resource", "resource": {"uri": "file:///a.bin", "blob": B64,
                                           "mimeType": "application/octet-stream"}},
         "embedded resource file:///a.bin application/octet-stream"),
    ],
)
def test_mcp_media_blocks_are_found_measured_as_sent_and_decoded(block: dict, what: str) -> None:
    media = media_of(block)
    assert media is not None
    assert (media.what, media.size, media.payload()) == (what, len(B64), DATA)


def test_an_embedded_text_is_measured_in_utf8_bytes_and_kept_as_valid_text() -> None:
    media = resource_media({"uri": "file:///t.txt", "text": "é\ud800"}, "resource")
    assert media is not None and media.plain
    assert media.size == len("é".encode()) + 3
    assert media.payload() == "é\ufffd".encode()


def test_a_payload_that_is_not_base64_is_kept_as_it_was_sent() -> None:
    assert base64_payload("not base64!") == b"not base64!"


def test_the_note_says_where_the_medium_is_or_that_it_could_not_be_kept() -> None:
    kept = not_sent_note("image image/png", 300_000, 262_144, reference="toolcap:ab", tried=True)
    assert kept == ("[image image/png of 292.9 KB not sent: over the 256.0 KB media limit;"
                    " kept as toolcap:ab]")
    failed = not_sent_note("audio", 2048, 1024, reference=None, tried=True)
    assert failed == "[audio of 2.0 KB not sent: over the 1.0 KB media limit; it could not be kept]"
    assert not_sent_note("x", 2048, 1024, reference=None, tried=False).endswith("media limit]")
    structured = not_sent_note("structuredContent", 2048, 1024, reference=None, tried=False,
                               limit_name="limit")
    assert structured == "[structuredContent of 2.0 KB not sent: over the 1.0 KB limit]"
