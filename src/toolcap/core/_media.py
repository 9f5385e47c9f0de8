"""Media in tool results: finding a payload in any SDK's block, measuring it, and the
note that stands in its place when it is not sent.

Every adapter and the MCP bounding read media through here, so an image is found,
measured and announced the same way whichever path it takes. Pure: the storing
and the notice line are the caller's.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._sizes import human_size
from ._utf8 import sanitize, utf8_size

__all__ = [
    "Media",
    "base64_payload",
    "field",
    "media_of",
    "not_sent_note",
    "resource_media",
]

_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a mapping (the SDKs' TypedDict params), else ``obj.key``."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def base64_payload(data: str) -> bytes:
    """The bytes a base64 text stands for; a text that is not base64 is kept as it was sent."""
    try:
        return base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return sanitize(data).encode("utf-8")


@dataclass(frozen=True)
class Media:
    """A payload found in a block: its text (base64 unless ``plain``) and what it is."""

    data: str
    what: str
    plain: bool = False

    @property
    def size(self) -> int:
        """The size a medium is measured by: the UTF-8 bytes of its text as sent.

        Base64 is ASCII, so for an encoded medium that is the length of its text.
        """
        return utf8_size(self.data) if self.plain else len(self.data)

    def payload(self) -> bytes:
        """The bytes to keep: the decoded medium, or the text of a plain one."""
        return sanitize(self.data).encode("utf-8") if self.plain else base64_payload(self.data)


def _data_url(url: object) -> tuple[str, str] | None:
    """``(base64 text, media type)`` of a ``data:…;base64,…`` URL."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header, _, data = url.partition(",")
    if not header.endswith(";base64"):
        return None
    return data, header[len("data:") : -len(";base64")]


def _describe(kind: object, *details: object) -> str:
    return " ".join(str(part) for part in (kind, *details) if isinstance(part, str) and part)


def media_of(block: Any) -> Media | None:
    """The payload of an image, audio, file or embedded-resource block, in any SDK's spelling.

    Known shapes: Anthropic (``source: {type: base64, data}``), LangChain standard
    blocks (``base64`` or ``source_type: base64`` with ``data``), OpenAI
    (``image_url`` data URLs, ``file_data``, ``input_audio``), MCP (``data``, and
    ``resource`` blocks holding a ``blob`` or a ``text``). A block that points
    elsewhere (a URL, a file id) carries no payload: ``None``.
    """
    if isinstance(block, str):
        return None
    kind = field(block, "type")
    if kind in _TEXT_TYPES or kind is None:
        return None
    if kind == "resource" and isinstance(field(block, "resource"), Mapping):
        return resource_media(block["resource"], "embedded resource")
    mime = field(block, "mime_type") or field(block, "media_type") or field(block, "mimeType")
    source = field(block, "source")
    plain = False
    if source is not None and field(source, "type") in ("base64", "text"):
        data = field(source, "data")
        mime = field(source, "media_type") or mime
        plain = field(source, "type") == "text"  # a document's plain-text source
    elif isinstance(field(block, "base64"), str):
        data = field(block, "base64")
    elif isinstance(field(block, "data"), str):
        data = field(block, "data")
    elif field(block, "file_data") is not None:
        data = field(block, "file_data")
        parsed = _data_url(data)
        if parsed is not None:
            data, mime = parsed
    elif field(block, "input_audio") is not None:
        data = field(field(block, "input_audio"), "data")
        mime = mime or field(field(block, "input_audio"), "format")
    else:
        url = field(block, "image_url")
        parsed = _data_url(field(url, "url") if not isinstance(url, str) else url)
        if parsed is None:
            return None
        data, mime = parsed
    if not isinstance(data, str):
        return None
    return Media(data, _describe(str(kind), mime), plain)


def resource_media(resource: Mapping[str, Any], kind: str, uri: object = None) -> Media | None:
    """The payload of an MCP resource's contents (``blob`` or ``text``), or ``None``."""
    what = _describe(kind, resource.get("uri", uri), resource.get("mimeType"))
    if isinstance(resource.get("text"), str):
        return Media(resource["text"], what, plain=True)
    if isinstance(resource.get("blob"), str):
        return Media(resource["blob"], what)
    return None


def not_sent_note(
    what: str, size: int, limit: int, *, reference: str | None, tried: bool,
    limit_name: str = "media limit",
) -> str:
    """The text that stands where something over a limit was not sent.

    It names what it was, its size and the limit, and where it is kept
    (``reference``), or that keeping it failed (``tried`` and no reference).
    """
    text = f"[{what} of {human_size(size)} not sent: over the {human_size(limit)} {limit_name}"
    if reference:
        return f"{text}; kept as {reference}]"
    return f"{text}; it could not be kept]" if tried else f"{text}]"
