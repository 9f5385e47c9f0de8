"""Artifact references: their format, how one is made from content, how one is read.

A reference is ``toolcap:`` followed by the first 32 lowercase hex digits of the
SHA-256 of the stored original. Anything that resolves one must accept a prefix
of at least 16 hex digits (with or without ``toolcap:``) and refuse everything
else before it comes anywhere near a path or a URL. Every part of toolcap that
makes, names, shortens or parses a reference does it here.
"""

from __future__ import annotations

import hashlib
import re

from ._errors import InvalidReferenceError
from ._utf8 import is_valid

__all__ = [
    "ARTIFACT_ID",
    "ID_LENGTH",
    "MAX_REFERENCE_LENGTH",
    "MIN_PREFIX",
    "PREFIX",
    "REF",
    "REFERENCE_LENGTH",
    "InvalidReferenceError",
    "fits_marker",
    "format_ref",
    "parse_ref",
    "reference_for",
    "short_ref",
]

PREFIX = "toolcap:"
#: Hex digits of the SHA-256 that name an artifact (128 bits).
ID_LENGTH = 32
#: The shortest prefix (in hex digits) that resolves a reference.
MIN_PREFIX = 16
#: The length of a reference as toolcap's stores write it: ``toolcap:`` and 32 hex digits.
REFERENCE_LENGTH = len(PREFIX) + ID_LENGTH
#: References longer than this are recorded but never put in a marker.
MAX_REFERENCE_LENGTH = 64
#: The name a store gives an artifact: the hex digits of its reference.
ARTIFACT_ID = re.compile(f"[0-9a-f]{{{ID_LENGTH}}}")
#: A full reference as it stands in a marker or a note.
REF = re.compile(f"{PREFIX}[0-9a-f]{{{ID_LENGTH}}}")

_HEX = re.compile(f"[0-9a-f]{{{MIN_PREFIX},64}}")


def format_ref(digest_hex: str) -> str:
    """Return the reference for a full SHA-256 hex digest."""
    return PREFIX + digest_hex[:ID_LENGTH]


def reference_for(data: bytes) -> str:
    """The reference under which a store keeps ``data``."""
    return format_ref(hashlib.sha256(data).hexdigest())


def short_ref(ref: str) -> str:
    """The shortest form of ``ref`` that still resolves: ``toolcap:`` and 16 hex digits."""
    return ref[: len(PREFIX) + MIN_PREFIX]


def parse_ref(ref: str) -> str:
    """Return the lowercase hex of ``ref`` (16 to 64 digits), or raise.

    Accepts ``toolcap:<hex>`` and bare ``<hex>``; hex is matched case-insensitively
    so that a reference survives a copy that changed its case. Anything else
    (path separators, dots, whitespace, too short or too long) raises
    :class:`InvalidReferenceError` and is never used to build a path.
    """
    if not isinstance(ref, str):
        kind = type(ref).__name__
        raise InvalidReferenceError(f"artifact reference must be a string, not {kind}")
    body = ref[len(PREFIX) :] if ref.startswith(PREFIX) else ref
    hexpart = body.lower()
    # fullmatch on an explicit character class: no path, no newline, no unicode digit.
    if not _HEX.fullmatch(hexpart) or not hexpart.isascii():
        shown = ref if len(ref) <= 80 else ref[:77] + "..."
        raise InvalidReferenceError(
            f"not an artifact reference: {shown!r} "
            f"(expected {PREFIX} followed by {MIN_PREFIX} to 64 hex digits)"
        )
    return hexpart


def fits_marker(reference: object) -> bool:
    """Whether ``reference`` is a short, encodable string a marker can name."""
    return (
        isinstance(reference, str)
        and 0 < len(reference) <= MAX_REFERENCE_LENGTH
        and reference.isprintable()
        and is_valid(reference)
    )
