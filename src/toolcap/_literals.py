"""Where the first of many literals occurs, in one vectorised pass (with the hyperscan extra).

The built-in ``keep_lines`` set is a few dozen literals, and a stream scans every
byte it elides for them. One RE2 search for their alternation runs at 300-800
MB/s here, slower than a pipe; Hyperscan (the ``hyperscan`` extra, which bundles
its library) matches a set of literals at several GB/s, so that finding the error
lines costs little next to reading them. Without the extra, :func:`literal_scan`
returns ``None`` and the caller keeps its own scan (RE2, or one ``bytes.find``
per anchor): the lines found are the same, since every place a literal occurs is
checked again by the caller.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["LiteralScan", "have_hyperscan", "literal_scan"]


@functools.cache
def _hyperscan() -> Any:
    # Imported on first use, not with toolcap: loading its library costs about as
    # much as a short command's whole run.
    try:
        return importlib.import_module("hyperscan")
    except ImportError:  # the extra is not installed (or has no build for this platform)
        return None


def have_hyperscan() -> bool:
    """Whether the ``hyperscan`` extra is installed (without loading it)."""
    return importlib.util.find_spec("hyperscan") is not None


class LiteralScan:
    """One Hyperscan database of literals, safe to use from any number of threads.

    Each thread scans with scratch space of its own (Hyperscan's scratch is not
    shared between concurrent scans).
    """

    def __init__(self, literals: Sequence[bytes]) -> None:
        hs = _hyperscan()
        self._lengths = [len(literal) for literal in literals]
        self._database = hs.Database(mode=hs.HS_MODE_BLOCK)
        self._database.compile(
            expressions=list(literals), ids=list(range(len(literals))),
            flags=hs.HS_FLAG_SINGLEMATCH, literal=True,
        )
        self._local = threading.local()
        self._stopped = hs.ScanTerminated

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = _hyperscan().Scratch(self._database)
        return scratch

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        """The start of the literal that ends first in ``data[pos:endpos]`` (``None``: none does).

        No literal holds a line break, so a literal that starts earlier in
        another line also ends earlier: the one that ends first is in the first
        line any literal occurs in.
        """
        if endpos <= pos:
            return None
        found: list[int] = []

        def on_match(ident: int, _start: int, end: int, _flags: int, _context: object) -> bool:
            found.append(pos + end - self._lengths[ident])
            return True  # stop: the first match is all a scan needs

        with contextlib.suppress(self._stopped):
            self._database.scan(memoryview(data)[pos:endpos], match_event_handler=on_match,
                                scratch=self._scratch())
        return found[0] if found else None


def literal_scan(literals: Sequence[bytes]) -> LiteralScan | None:
    """A :class:`LiteralScan` of ``literals`` (no line break in any); ``None`` without the extra."""
    if not literals or _hyperscan() is None:
        return None
    if any(b"\n" in literal or not literal for literal in literals):
        raise ValueError("a literal is empty or holds a line break")
    return LiteralScan(literals)
