"""The record a cut MCP result carries in ``_meta``, and the check that lets a
second toolcap pass an already bounded result on without cutting it again.

A result toolcap changed carries, under ``_meta["toolcap/cut"]``::

    {"version": 1, "originalBytes": 1048576, "keptBytes": 32641,
     "cap": "size_threshold", "limit": 32768, "ref": "toolcap:…", "refs": ["toolcap:…"]}

Sizes are the UTF-8 bytes of the result's payload (``content`` and
``structuredContent``; ``contents`` of a resource; ``messages`` of a prompt) in
compact JSON, as received and as sent. ``cap`` names the limit that cut last
(``size_threshold``, ``batch_ceiling``, ``wire_budget``, ``media_threshold``);
``limit`` is the bound the result was kept to, in bytes (the same number a tool
advertises as ``anthropic/maxResultSizeChars``): it bounds the text (every text
the model reads, notes and marker included) and, on its own,
``structuredContent``, so ``keptBytes``, which also counts the JSON around the
text and ``structuredContent``, may exceed it; ``ref`` is the artifact holding
the original (``null`` when nothing could be kept), ``refs`` every artifact of
the result.

The record is a claim, and a server may forge it: it is only ever used to skip
work on a result that is measured, here, to be within this toolcap's limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core._json import json_size
from ..core._refs import REF

__all__ = [
    "CUT_KEY", "PAYLOAD_FIELDS", "bounded_upstream", "payload_bytes", "upstream_record",
    "with_record",
]

#: The ``_meta`` key of the record.
CUT_KEY = "toolcap/cut"
#: The record's schema version.
VERSION = 1
#: The fields of a result that hold what it says, per kind of result.
PAYLOAD_FIELDS = {
    "tools/call": ("content", "structuredContent"),
    "resources/read": ("contents",),
    "prompts/get": ("messages",),
}


def payload_bytes(result: dict[str, Any], fields: Sequence[str],
                  measured: dict[int, tuple[str, int]] | None = None) -> int | None:
    """The record's measure: UTF-8 bytes of the compact JSON of ``fields`` of ``result``
    (``None`` for a payload nested too deeply to walk).

    ``measured``: long strings measured before (see ``json_size``); a text that is
    also in structuredContent is measured once either way.
    """
    seen = {} if measured is None else measured
    try:
        return sum(json_size(result[name], seen) for name in fields
                   if result.get(name) is not None)
    except RecursionError:
        return None


def upstream_record(result: dict[str, Any]) -> dict[str, Any] | None:
    """The record another toolcap left on ``result`` when it names the original by a
    reference of toolcap's form and gives its size; else None."""
    meta = result.get("_meta")
    record = meta.get(CUT_KEY) if isinstance(meta, dict) else None
    if not isinstance(record, dict):
        return None
    ref, size = record.get("ref"), record.get("originalBytes")
    if not (isinstance(ref, str) and REF.fullmatch(ref)):
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        return None
    return record


def with_record(
    original: dict[str, Any],
    new: dict[str, Any],
    fields: Sequence[str],
    *,
    cap: str,
    limit: int | None,
    refs: Sequence[str],
    upstream: dict[str, Any] | None = None,
    measured: dict[int, tuple[str, int]] | None = None,
) -> dict[str, Any]:
    """``new`` with the record of its cut from ``original`` in its ``_meta`` (a record
    that came with the original is replaced: this one measures what is sent).

    ``upstream``: the record of the toolcap that cut the original first, whose
    reference is readable through this one: the record then gives the size of
    that original and names it first.
    """
    if upstream is not None:
        refs = [upstream["ref"], *(ref for ref in refs if ref != upstream["ref"])]
    record = {
        "version": VERSION,
        "originalBytes": (payload_bytes(original, fields, measured) if upstream is None
                          else upstream["originalBytes"]),
        "keptBytes": payload_bytes(new, fields, measured),
        "cap": cap,
        "limit": limit,
        "ref": refs[0] if refs else None,
        "refs": list(refs),
    }
    meta = new.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    return {**new, "_meta": {**meta, CUT_KEY: record}}


def bounded_upstream(
    result: dict[str, Any], fields: Sequence[str], limit: int | None, ceiling: int | None
) -> bool:
    """Whether ``result`` was bounded by another toolcap to ``limit`` or tighter and is,
    measured here, within ``ceiling`` bytes (every limit that applies to it).

    The payload's JSON bytes are at least the UTF-8 bytes of each text, media
    payload and structured value in it, so a payload within ``ceiling`` is within
    every limit a cut would apply: skipping the cut changes nothing but the work.
    """
    meta = result.get("_meta")
    record = meta.get(CUT_KEY) if isinstance(meta, dict) else None
    if not isinstance(record, dict):
        return False
    claimed = record.get("limit")
    if isinstance(claimed, bool) or not isinstance(claimed, int):
        return False
    if limit is not None and claimed > limit:
        return False
    if ceiling is None:
        return True
    size = payload_bytes(result, fields)
    return size is not None and size <= ceiling
