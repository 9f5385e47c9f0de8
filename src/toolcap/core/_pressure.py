"""Context pressure: the batch ceiling of a turn shrinks as the context window fills.

With ``context_window`` set, a turn's batch ceiling is the lesser of
``batch_ceiling`` and half of what is left of the window once ``reserve`` (room for
the answer) and what the conversation already uses are taken out. "Used" is the
prompt size the API last reported, or the measure of the messages when none was.

Bounds stay in bytes. The API reports tokens, and a window may be written in
tokens (``"200k tokens"``); under ``measure = "bytes"`` a token counts as
:data:`BYTES_PER_TOKEN` bytes (English prose and code run 3.4-4.5 bytes a
token, so the byte bound errs on the tight side for them; JSON runs 2.4-2.9 and
base64 1.5, which ``measure = "tokens"`` counts as they are).
"""

from __future__ import annotations

from typing import Any

from ._media import field
from ._sizes import MIN_LIMIT, Limit
from ._tokens import BYTES_PER_TOKEN, parse_amount

__all__ = [
    "BYTES_PER_TOKEN",
    "PRESSURE_SHARE",
    "parse_window",
    "pressure_ceiling",
    "reported_tokens",
]

#: The share of what is left of the window that one turn's tool results may take.
PRESSURE_SHARE = 0.5


def parse_window(value: object, *, key: str, file: str | None = None,
                 measure: str = "bytes") -> int:
    """A window or reserve in ``measure``'s unit: a size (``"800KB"``) or tokens
    (``"200k tokens"``; ``k`` is 1,000 and ``M`` 1,000,000, as model windows are
    quoted). See :func:`toolcap.core._tokens.parse_amount`."""
    return parse_amount(value, key=key, file=file, measure=measure)


def pressure_ceiling(ceiling: Limit, window: int | None, reserve: int, used: int | None,
                     bytes_per_token: float | None = None) -> Limit:
    """The batch ceiling of a turn under context pressure (``window`` None: ``ceiling``).

    ``window``, ``reserve`` and ``used`` are in one unit: bytes, or tokens with
    ``bytes_per_token`` (the batch's own, as measured) turning the share of what
    is left into bytes. Never below 1 KB, the smallest limit anything takes, so
    a full window still leaves each result a marker naming where it was kept.
    """
    if window is None:
        return ceiling
    left = max(0, window - reserve - (used or 0))
    share = left * PRESSURE_SHARE * (1.0 if bytes_per_token is None else bytes_per_token)
    limit = max(MIN_LIMIT, int(share))
    return limit if ceiling is None else min(ceiling, limit)


def reported_tokens(usage: Any) -> int | None:
    """The prompt size an API reported, in tokens: OpenAI Chat ``prompt_tokens``,
    Responses and Anthropic ``input_tokens`` (Anthropic's cached tokens added),
    LangChain ``usage_metadata``; an ``int`` as it is."""
    if isinstance(usage, int) and not isinstance(usage, bool):
        return max(0, usage)
    total = 0
    for key in ("prompt_tokens", "input_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens"):
        value = field(usage, key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
            if key == "prompt_tokens":
                break
    return total or None
