"""An artifact's record in a key name, so that listing an object store lists the records too.

An S3 listing (``ListObjectsV2``) returns each key with its size and time, never
its user metadata, so ``toolcap artifacts ls``, ``gc`` and eviction had to read
one record object per artifact. The object store therefore also writes, per
artifact, an empty object whose key spells its record (every field of
:meth:`ArtifactInfo.to_dict` but the location, which the key gives)::

    <root>/.ls/<id>/<sha256[32:]>~<bytes>~<original>~<lines>~<created>~<last read>
                   ~<head>~<stored sha256>~<tool>[~p]                     (one name)

(split by ``/`` every 200 characters, so that no path segment is too long for a
local file system; ``tool`` is ``t`` and its URL-safe base64; an empty field is
``None``; ``~p`` marks a partial artifact).

Why names rather than one index object: each name is written once by the one
writer of that artifact, so concurrent writers in several processes or machines
never read-modify-write a shared object (S3's conditional writes are not
everywhere fsspec goes); a listing returns them a thousand a page. A read that
counts as a use writes the name with the new last read, then removes the old
one; two names for one id (racing readers, a killed one) are resolved to the
latest, and ``gc`` removes the others. A record too long for a key (a tool name
of hundreds of characters) gets no name and is read from its record object, as
are the artifacts of versions that wrote none.
"""

from __future__ import annotations

import base64
import binascii
import math

from toolcap.core._refs import ARTIFACT_ID, format_ref
from toolcap.store._records import ArtifactInfo

__all__ = ["FOLDER", "MAX_NAME", "listed_info", "listing_name"]

#: The folder of the names under the store's root.
FOLDER = ".ls"
#: Longest name written (S3 keys end at 1,024 bytes, with the root before it).
MAX_NAME = 720
_SEGMENT = 200
_HEX = frozenset("0123456789abcdef")


def _number(value: float) -> str:
    return repr(float(value))


def listing_name(info: ArtifactInfo) -> str | None:
    """The key (below ``<root>/.ls/``) that spells ``info``; None when it would be too long."""
    ident = info.sha256[:32]
    tool = "" if info.tool is None else "t" + base64.urlsafe_b64encode(
        info.tool.encode("utf-8", "surrogatepass")).decode("ascii")
    fields = [
        info.sha256[32:], str(info.bytes), str(info.original_bytes), str(info.lines),
        _number(info.created), _number(info.last_read),
        "" if info.head_bytes is None else str(info.head_bytes),
        info.stored_sha256 or "", tool,
    ]
    if info.partial:
        fields.append("p")
    name = "~".join(fields)
    if len(name) > MAX_NAME:
        return None
    return ident + "/" + "/".join(name[i:i + _SEGMENT] for i in range(0, len(name), _SEGMENT))


def listed_info(key: str, location: str) -> ArtifactInfo | None:
    """The record a listed key below ``.ls/`` spells, or None when it is not one of ours."""
    ident, _, rest = key.partition("/")
    fields = rest.replace("/", "").split("~")
    if not ARTIFACT_ID.fullmatch(ident) or len(fields) not in (9, 10):
        return None
    if len(fields) == 10 and fields[9] != "p":
        return None
    try:
        sha, size, original, lines, created, last, head, stored, tool = fields[:9]
        if len(sha) != 32 or not _HEX.issuperset(sha) or (stored and (
                len(stored) != 64 or not _HEX.issuperset(stored))):
            return None
        times = float(created), float(last)
        if not all(math.isfinite(t) for t in times):
            return None
        return ArtifactInfo(
            ref=format_ref(ident + sha), sha256=ident + sha, bytes=int(size),
            original_bytes=int(original), lines=int(lines), created=times[0],
            last_read=times[1],
            tool=base64.urlsafe_b64decode(tool[1:]).decode("utf-8", "surrogatepass")
            if tool.startswith("t") else None,
            partial=len(fields) == 10, head_bytes=int(head) if head else None,
            location=location, stored_sha256=stored or None,
        )
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
