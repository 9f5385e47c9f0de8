"""A tool response as it arrives (``ToolResponse``) and on its way through the seam
(``Work``, used by ``_finalize.py``): its parts, sizes and record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._notice import Cap

if TYPE_CHECKING:
    from ._config import ToolPolicy

Part = str | bytes
Content = str | bytes | Sequence[Part] | None


@dataclass(frozen=True)
class ToolResponse:
    """One tool response, as a tool or a server produced it.

    Attributes:
        tool: the tool's name; it selects the per-tool policy.
        content: the text (``str``, or ``bytes`` read as UTF-8; ``bytes`` that are
            not text are stored and delivered as one line naming them), a sequence of
            text parts (for example the text blocks of an MCP result), or
            ``None`` for no content (left alone).
        call_id: the tool call's identifier, if any.
        is_error: whether the tool failed; errors are bounded like any response.
        artifacts: what is already stored of this response: ``None`` if nothing
            was decided, ``()`` if it was decided to store nothing, else the
            references. When it is decided, the finalizer never stores it again.
    """

    tool: str
    content: Content
    call_id: str | None = None
    is_error: bool = False
    artifacts: tuple[str, ...] | None = None



@dataclass
class Work:
    """One response on its way through the seam."""

    response: ToolResponse
    policy: ToolPolicy
    originals: list[Part]
    whole: list[str]  # each original as valid text, before any cut
    whole_sizes: list[int]
    original_sizes: list[int]  # of each part as received (bytes: their length)
    parts: list[str] = field(init=False)
    sizes: list[int] = field(init=False)
    # Keyed by the span of parts stored (start, end): each is stored at most once,
    # even when storing failed.
    references: dict[tuple[int, int], str] = field(default_factory=dict)
    attempted: set[tuple[int, int]] = field(default_factory=set)
    cut_any: bool = False
    merged: tuple[int, int] | None = None  # the span of parts a collapse made one
    capped_by: Cap | None = None
    not_kept: str | None = None
    binary: set[int] = field(default_factory=set)  # parts replaced by a line naming them
    # A text part's UTF-8 bytes as stored, until its cut takes them: a cut of those
    # bytes equals the cut of the text and spares encoding a big text twice.
    encoded: dict[int, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.parts = list(self.whole)
        self.sizes = list(self.whole_sizes)

    @property
    def separators(self) -> int:
        """Bytes of the newlines that join the parts into ``FinalizedResponse.text``."""
        return max(0, len(self.whole) - 1)

    @property
    def whole_size(self) -> int:
        return sum(self.whole_sizes) + self.separators

    @property
    def delivered_size(self) -> int:
        # A collapse delivers fewer parts than arrived: fewer line breaks too.
        return sum(self.sizes) + max(0, len(self.parts) - 1)

    def sent_size(self, original: int) -> int:
        """How much of the original the notice says was sent: a part passed whole counts
        as received (its replaced bytes grew), a cut one as delivered, a binary one as 0."""
        if self.merged is not None:  # parts no longer align with what arrived
            return min(self.delivered_size, original)
        sizes, received = self.sizes, self.original_sizes
        return self.separators + sum(0 if i in self.binary else received[i] if self.parts[i]
                                     is self.whole[i] else sizes[i] for i in range(len(sizes)))
