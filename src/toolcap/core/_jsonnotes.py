"""The notes a structural cut leaves where it elided, each one JSON string.

A note names what is gone by JSON Pointer (a run of members or items, or one
value collapsed whole) and, when the original is stored, its reference, so a
reader can fetch exactly that part back. A pointer too long to be worth naming
gives way to its nearest shorter ancestor. The notes are rendered in the
writer's style, so the cut (:mod:`toolcap.core._jsoncut`) and the cut guided by
a schema (:mod:`toolcap.core._schemacut`) measure them as they will be written.
Pure.
"""

from __future__ import annotations

from ._jsondoc import Number, Writer, pointer, type_name
from ._sizes import human_size
from ._utf8 import utf8_size

__all__ = ["ELISION_KEY", "MAX_SHOWN_POINTER", "Notes", "elision_key", "shown_pointer"]

#: The key of the member that stands for an object's elided members (made
#: unique with a suffix when the object has a member of that name).
ELISION_KEY = "toolcap"
#: A pointer longer than this is not named in a note: its nearest shorter ancestor is.
MAX_SHOWN_POINTER = 160


class Notes:
    """The notes of one cut: rendered by ``writer``, naming ``reference`` if any."""

    def __init__(self, writer: Writer, reference: str | None) -> None:
        self.w = writer
        self.where = f"; full output: {reference}" if reference else ""
        self._string_sizes: dict[int, int] = {}  # id -> UTF-8 size, asked again and again

    def note(self, text: str) -> str:
        """``[toolcap: TEXT; full output: REF]`` as a JSON string."""
        return self.w.leaf(f"[toolcap: {text}{self.where}]")

    def elided(self, path: list[str], first: str, last: str, count: int, noun: str) -> str:
        """The note for ``count`` members or items (``noun``) from ``first`` to ``last``
        under ``path``."""
        plural = noun if count == 1 else noun + "s"
        first_pointer = pointer([*path, first])
        last_pointer = pointer([*path, last])
        if max(utf8_size(first_pointer), utf8_size(last_pointer)) > MAX_SHOWN_POINTER:
            return self.note(f"{count} {plural} elided under {shown_pointer(path)}")
        if count == 1:
            return self.note(f"1 {noun} elided ({first_pointer})")
        return self.note(f"{count} {plural} elided ({first_pointer} … {last_pointer})")

    def collapsed(self, value: object, path: list[str]) -> str:
        """The note that stands for a whole value too big for its share."""
        if isinstance(value, dict):
            what = f"object of {len(value)} members"
        elif isinstance(value, list):
            what = f"array of {len(value)} items"
        elif isinstance(value, str) and not isinstance(value, Number):
            size = self._string_sizes.get(id(value))
            if size is None:
                size = self._string_sizes[id(value)] = utf8_size(value)
            what = f"string of {human_size(size)}"
        else:
            what = type_name(value)
        place = pointer(path)
        at = place if utf8_size(place) <= MAX_SHOWN_POINTER else shown_pointer(path)
        return self.note(f"{what} elided at {at or '/'}" if at else f"{what} elided")


def elision_key(value: dict[str, object]) -> str:
    """The key of the member standing for ``value``'s elided members: :data:`ELISION_KEY`,
    with a suffix if ``value`` has a member of that name."""
    key, suffix = ELISION_KEY, 1
    while key in value:
        suffix += 1
        key = f"{ELISION_KEY}_{suffix}"
    return key


def shown_pointer(path: list[str]) -> str:
    """The longest ancestor pointer of ``path`` a note can name."""
    for end in range(len(path), -1, -1):
        candidate = pointer(path[:end])
        if utf8_size(candidate) <= MAX_SHOWN_POINTER:
            return candidate or "/"
    return "/"  # pragma: no cover - the empty pointer always fits
