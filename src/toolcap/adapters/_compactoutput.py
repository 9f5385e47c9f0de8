"""One tool output under compaction: its measure, its stored original, its placeholder.

Shared by the library's compaction (:mod:`toolcap.adapters._compact`) and the
compaction of a saved session (:mod:`toolcap.sessions._compact`), so that both
measure, keep and mask an output alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core._compaction import cut_marker_of, render_placeholder
from ..core._json import dumps
from ..core._media import media_of
from ..core._tokens import BYTES_PER_TOKEN
from ..core._utf8 import sanitize, utf8_size
from ._common import plain_json, text_of

__all__ = ["content_size", "original_of", "placeholder_of"]


def _block_size(block: Any, measure: Callable[[str], int], tokens: bool) -> int:
    text = text_of(block)
    if text is not None:
        return measure(text)
    media = media_of(block)
    if media is not None:  # its base64 text in bytes; in tokens, at the conversion rate
        return -(-media.size // BYTES_PER_TOKEN) if tokens else media.size
    return measure(dumps(plain_json(block)))


def content_size(content: Any, measure: Callable[[str], int] = utf8_size,
                 tokens: bool = False) -> int | None:
    """The measure of a result's content, or ``None`` for content that is not text or blocks."""
    if isinstance(content, str):
        return measure(content)
    if isinstance(content, (list, tuple)):
        return sum(_block_size(block, measure, tokens) for block in content)
    return None


def original_of(content: Any) -> bytes:
    """What is stored: a text's UTF-8, or the JSON of a list of blocks (media included)."""
    if isinstance(content, str):
        return sanitize(content).encode("utf-8")
    return dumps(plain_json(content)).encode("utf-8")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(text for text in map(text_of, content) if text is not None)


def placeholder_of(tool: str, content: Any, reference: str) -> str:
    """The placeholder names the stored original's size in bytes, whatever the measure."""
    text = _text(content)
    blocks = 0 if isinstance(content, str) else len(content)
    size = content_size(content, utf8_size, False) or 0
    return render_placeholder(tool=tool, size=size, reference=reference, text=text,
                              blocks=blocks, cut_from=cut_marker_of(text))
