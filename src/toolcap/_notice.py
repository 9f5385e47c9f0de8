"""The notice: one line on stderr and one WARNING record per response a cap changed.

The terminal may show the full output while the assistant got less; the notice is
the only sign of it, so its wording is a contract::

    {tool}: sent {kept} of {original} to the assistant ({cap})
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Literal, TextIO

from .core._sizes import human_size

__all__ = ["Cap", "emit_notice", "failure_reason", "logger", "notice_line"]

#: Which bound changed a response. The finalizer's caps are ``size_threshold`` and
#: ``batch_ceiling``; MCP results and adapters also replace media (``media_threshold``)
#: and fit text to the wire (``wire_budget``). Input that is not text is replaced
#: by a line naming it (``binary``).
Cap = Literal["size_threshold", "batch_ceiling", "media_threshold", "wire_budget", "binary"]

logger = logging.getLogger("toolcap")
# The notice already goes to stderr; without a handler of its own, logging's
# last-resort handler would print every line a second time.
logger.addHandler(logging.NullHandler())


def notice_line(
    tool: str, delivered: int, original: int, cap: Cap, *, not_kept: str | None = None
) -> str:
    """The notice for one changed response; ``not_kept`` says why the original was lost."""
    sent, of = human_size(delivered), human_size(original)
    line = f"{tool}: sent {sent} of {of} to the assistant ({cap})"
    if not_kept:
        line += f"; the full output could not be kept ({not_kept})"
    return line


def emit_notice(line: str, *, stderr: TextIO | None = None, to_stderr: bool = True) -> None:
    """Log ``line`` as a WARNING and, unless turned off, print it on stderr."""
    logger.warning(line)
    if to_stderr:
        stream = stderr or sys.stderr
        # A closed or broken stderr must not break the caller's agent loop.
        with contextlib.suppress(OSError, ValueError):
            print(line, file=stream, flush=True)


def failure_reason(error: BaseException) -> str:
    """A short, one-line reason for a store failure (never any content)."""
    text = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        text = error.strerror
    return text.splitlines()[0][:160] if text else type(error).__name__
