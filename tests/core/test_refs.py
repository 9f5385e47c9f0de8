"""The reference format: one module makes, shortens and reads every reference."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcap.core._marker import Marker
from toolcap.core._refs import (
    MAX_REFERENCE_LENGTH,
    REF,
    REFERENCE_LENGTH,
    InvalidReferenceError,
    parse_ref,
    reference_for,
    short_ref,
)
from toolcap.store import MemoryStore


@given(st.binary(max_size=2048))
def test_a_reference_is_what_a_store_gives_for_the_same_bytes(data: bytes) -> None:
    reference = reference_for(data)
    assert reference == MemoryStore().put(data)
    assert REF.fullmatch(reference)
    assert len(reference) == REFERENCE_LENGTH <= MAX_REFERENCE_LENGTH


def test_the_short_form_resolves_to_the_same_hex() -> None:
    reference = reference_for(b"some output")
    short = short_ref(reference)
    assert len(short) == len("toolcap:") + 16
    assert parse_ref(reference).startswith(parse_ref(short))
    assert parse_ref(short.upper().replace("TOOLCAP:", "toolcap:")) == parse_ref(short)


@pytest.mark.parametrize(
    "bad", ["toolcap:" + "a" * 15, "a" * 65, "toolcap:../etc/passwd", "toolcap:" + "g" * 32, ""]
)
def test_a_malformed_reference_is_refused(bad: str) -> None:
    with pytest.raises(InvalidReferenceError, match="not an artifact reference"):
        parse_ref(bad)


def test_the_marker_reserves_room_for_a_reference_of_the_format() -> None:
    marker = Marker()
    reference = reference_for(b"x")
    rendered = marker.render(original=10**9, kept=10**5, reference=reference)
    assert reference in rendered
    assert len(rendered.encode()) <= marker.reserve(len(reference))
