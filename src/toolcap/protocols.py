"""The pluggable parts of toolcap, declared as Protocols.

Anything with these methods plugs in; nothing needs to inherit from toolcap.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ArtifactSink"]


@runtime_checkable
class ArtifactSink(Protocol):
    """Where the finalizer keeps the full original of a response it cuts.

    ``put`` stores ``data`` (the exact bytes of the original; for text, its UTF-8
    encoding) and returns its reference, ``"toolcap:"`` followed by lowercase hex
    digits of its SHA-256. The same bytes must give the same reference. On any
    failure it raises; the finalizer then delivers the bounded response without a
    reference and says so in the notice. It is called at most once per response.
    """

    def put(self, data: bytes, *, tool: str | None = None) -> str: ...
