"""A value's compact JSON as bytes, its long strings taken from the bytes they were read from.

Storing a tool result's 100 MB ``structuredContent`` serialized it again with
``json.dumps`` (escaping every character of its long string, then encoding the
text): the costliest step of a big result through the proxy. Yet the line it
was read from usually holds that very serialization already: an MCP server's
JSON is compact, and a string's escapes are JSON's short ones. When a reader
keeps, for each long string it decoded, the raw bytes it was decoded from
(:class:`RawStrings`), :func:`dumps_utf8` splices those bytes in place of
serializing the string, wherever they are exactly what :func:`~toolcap.core.
_jsonsize.dumps` would write for it (:func:`canonical`): the result is always
``dumps(value).encode("utf-8")``, byte for byte, only cheaper. Everything else
(the small rest of the value, and any long string whose bytes were written
another way) is serialized by ``dumps``. Pure.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from typing import Any

from ._jsonsize import dumps

__all__ = ["RawStrings", "canonical", "dumps_utf8"]

class RawStrings:
    """The bytes a reader decoded long strings from, by string: each a JSON string token
    (quotes included) that a strict decoder accepted. Whether a token is what
    ``dumps`` writes is asked once (:func:`canonical`), when it is first needed."""

    __slots__ = ("_tokens",)

    def __init__(self) -> None:
        # By id of the string: (the string, which keeps the id its own; its token, or
        # None once found not canonical; whether it was checked).
        self._tokens: dict[int, tuple[str, Any, bool]] = {}

    def __len__(self) -> int:
        return len(self._tokens)

    def add(self, value: str, token: Any) -> None:
        """Keep ``token`` (bytes or a view of them) as the bytes ``value`` was read from."""
        self._tokens.setdefault(id(value), (value, token, False))

    def canonical_token(self, value: str) -> Any:
        """The token of ``value`` if it was kept and is what ``dumps`` writes, else None."""
        entry = self._tokens.get(id(value))
        if entry is None or entry[0] is not value:
            return None
        found, token, checked = entry
        if not checked:
            token = token if canonical(token) else None
            self._tokens[id(value)] = (found, token, True)
        return token


# An escape ``dumps`` does not write: "\/", or a "\u" escape other than the six-byte
# form of a control character without a short escape (lower-case hex, as json writes
# it). A backslash escaped by another one ("\\u") also matches: then the bytes are
# only declined, never wrongly taken (the string is serialized instead).
_FOREIGN_ESCAPE = re.compile(rb"\\(?:/|u(?!00(?:0[0-7be-f]|1[0-9a-f])))")


def canonical(token: Any) -> bool:
    """Whether the bytes of a valid JSON string token (quotes included, valid UTF-8, as
    a strict decoder accepted them) are the ones ``dumps`` writes for its value.

    JSON lets a string be written in several ways; ``dumps`` (``ensure_ascii=False``)
    writes every character as itself except ``"``, ``\\`` and the control
    characters, with the short escapes where JSON has one. A valid token differs
    from that only by an escape ``dumps`` would not use.
    """
    return _FOREIGN_ESCAPE.search(token) is None


def dumps_utf8(value: object, raw: RawStrings | None = None,
               seen: dict[int, tuple[str, int]] | None = None) -> bytes:
    """``dumps(value).encode("utf-8")``, the long strings of ``value`` found in ``raw``
    with canonical bytes spliced in rather than serialized again.

    ``seen`` (:func:`~toolcap.core._jsonsize.json_size`'s table) gets the size of
    each string spliced, so that measuring ``value`` later costs nothing for them.
    Raises what ``dumps`` raises (``TypeError``, ``ValueError``, ``RecursionError``);
    with ``raw``, ``value`` must be free of cycles, as parsed JSON is (a cycle ends
    in ``RecursionError``).
    """
    if not raw:
        return dumps(value).encode("utf-8")
    spliced: list[Any] = []
    mark = f"\x00toolcap-raw-{secrets.token_hex(8)}-"

    def placeholder(text: str) -> str | None:
        token = raw.canonical_token(text)
        if token is None:
            return None
        spliced.append(token)
        if seen is not None:
            seen.setdefault(id(text), (text, len(token)))
        return f"{mark}{len(spliced) - 1}"

    skeleton = _substituted(value, placeholder)
    if not spliced:
        return dumps(value).encode("utf-8")
    # Each placeholder serializes as itself in quotes (its NUL as \u0000), nowhere else:
    # the mark is random, so a value cannot hold it.
    opening = re.escape(dumps(mark)[:-1])  # the opening quote and the mark, no closing quote
    pieces = re.split(opening + r'(\d+)"', dumps(skeleton))
    parts: list[Any] = []
    for index, piece in enumerate(pieces):
        parts.append(piece.encode("utf-8") if index % 2 == 0 else spliced[int(piece)])
    return b"".join(parts)


def _substituted(value: Any, placeholder: Callable[[str], str | None]) -> Any:
    """``value`` with each string ``placeholder`` names replaced by its name (the same
    object where nothing inside it changed). ``value`` is parsed JSON: no cycle."""
    if isinstance(value, str):
        named = placeholder(value)
        return value if named is None else named
    if isinstance(value, dict):
        items = {key: _substituted(item, placeholder) for key, item in value.items()}
        return value if all(items[key] is item for key, item in value.items()) else items
    if isinstance(value, (list, tuple)):
        new = [_substituted(item, placeholder) for item in value]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value
