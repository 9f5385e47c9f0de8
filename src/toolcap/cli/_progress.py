"""A progress bar over the whole of a long file command: bytes done of bytes to do.

Shown on a terminal only (stderr a TTY), for files of at least
:data:`PROGRESS_MIN_BYTES`, and only with tqdm installed (``toolcap[progress]``).
The total may grow once the work is known (artifacts to write, say), so the bar
covers the whole run, not only the first read.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["PROGRESS_MIN_BYTES", "Progress", "progress"]

#: Files at least this large get a progress bar (on a terminal, with tqdm installed).
PROGRESS_MIN_BYTES = 8 * 1024 * 1024


class Progress:
    """Counts bytes done; draws them when a bar is shown."""

    def __init__(self, bar: Any | None) -> None:
        self._bar = bar

    def step(self, what: str) -> None:
        """Name the step under way (reading, storing, writing)."""
        if self._bar is not None:
            self._bar.set_description_str(what, refresh=False)

    def more(self, amount: int) -> None:
        """``amount`` more bytes to do than planned."""
        if self._bar is not None and amount > 0:
            self._bar.total += amount
            self._bar.refresh()

    def advance(self, amount: int) -> None:
        """``amount`` more bytes done."""
        if self._bar is not None and amount > 0:
            self._bar.update(amount)


@contextlib.contextmanager
def progress(total: int, what: str) -> Iterator[Progress]:
    """A :class:`Progress` for ``total`` bytes to begin with; silent unless shown."""
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield Progress(None)
        return
    try:
        tqdm = importlib.import_module("tqdm").tqdm  # the extra toolcap[progress]
    except ImportError:
        yield Progress(None)
        return
    try:
        known = os.get_terminal_size(sys.stderr.fileno()).columns > 0
    except OSError:
        known = False
    # A terminal that reports no size (a bare pty) would get no bar at all.
    shape = {} if known else {"ncols": 80, "nrows": 24}
    bar = tqdm(total=total, unit="B", unit_scale=True, desc=what, leave=False,
               file=sys.stderr, **shape)
    try:
        yield Progress(bar)
    finally:
        bar.close()
