"""The structural cut: a JSON document cut so that what is delivered still parses.

Planned top-down from the budget, so the work beyond the parse is O(budget ×
depth), whatever the size of the document:

* a value that fits is rendered whole;
* an object keeps its first members; their values share the budget by
  water-fill (small ones stay whole, the large ones are cut to a common level);
  members that do not fit become one added member whose key starts with
  ``toolcap`` and whose value names them by JSON Pointer;
* an array keeps whole items from its start and its end (shared as the
  strategy shares a text cut) and one string element naming the run between;
* a long string is cut inside with the text rules (:func:`toolcap.core._cut.cut`);
* a value too big for what is left of the budget collapses into a note naming
  its pointer.

Kept keys and scalars are the original's (numbers as written); nothing is
added but the notes. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._allocate import water_fill
from ._cut import CapResult, cut, plan_cut
from ._jsondoc import (
    COMPACT,
    Cost,
    Format,
    Number,
    Style,
    Writer,
    parse_document,
    plain_cost,
    wire_cost,
)
from ._jsonlines import PREFIX_BYTES, cut_json_lines, looks_like_json_lines
from ._jsonnotes import ELISION_KEY, Notes, elision_key
from ._keeplines import KeepLines
from ._marker import Marker
from ._strategy import Strategy, split_content
from ._utf8 import decode, sanitize, utf8_size

__all__ = ["ELISION_KEY", "cut_by_format", "cut_document", "cut_json"]

# A string cut keeps at least this much beside its marker, or the string collapses.
_MIN_STRING_CONTENT = 16
# A member at most this many times the size of its collapse note is never collapsed.
_SMALL_MEMBER = 4
# The indented layout is kept when it keeps at least this share of what compact would.
_STYLE_SHARE = 0.8


@dataclass(frozen=True)
class _Options:
    strategy: Strategy
    head_ratio: float
    marker: Marker
    reference: str | None


class _Cutter:
    """One structural cut in one style and one cost."""

    def __init__(self, writer: Writer, options: _Options) -> None:
        self.w = writer
        self.options = options
        self.notes = Notes(writer, options.reference)

    # -- values ----------------------------------------------------------------------

    def fit(self, value: object, depth: int, budget: int, path: list[str]) -> str | None:
        """``value`` within ``budget``: whole, cut by structure, or ``None`` if it cannot."""
        size = self.w.size(value, depth, budget)
        if size <= budget:
            return self.w.render(value, depth)
        if isinstance(value, dict):
            return self._object(value, depth, budget, path, empty_ok=False)
        if isinstance(value, list):
            return self._array(value, depth, budget, path, empty_ok=False)
        if isinstance(value, str) and not isinstance(value, Number):
            return self._string(value, budget)
        return None

    def fit_or_note(self, value: object, depth: int, budget: int, path: list[str]) -> str:
        """:meth:`fit`, else the collapse note (the caller made room for it)."""
        found = self.fit(value, depth, budget, path)
        return self.notes.collapsed(value, path) if found is None else found

    def smallest(self, value: object, depth: int, cap: int, path: list[str]) -> tuple[int, int]:
        """``(size, least)``: the bounded size of ``value`` and the least it can cost."""
        size = self.w.size(value, depth, cap)
        note = self.w.cost(self.notes.collapsed(value, path))
        # A member not much larger than its note is kept whole or not at all: many
        # notes in a row tell less than fewer whole members.
        return size, size if size <= _SMALL_MEMBER * note else note

    def root(self, value: object, budget: int) -> str | None:
        """The whole document within ``budget``, always an object or array, or ``None``."""
        if self.w.size(value, 0, budget) <= budget:  # the original's escapes may be longer
            return self.w.render(value)
        if isinstance(value, dict):
            return self._object(value, 0, budget, [], empty_ok=True)
        if isinstance(value, list):
            return self._array(value, 0, budget, [], empty_ok=True)
        return None  # pragma: no cover - parse_document returns containers only

    def _string(self, text: str, budget: int) -> str | None:
        options = self.options
        floor = options.marker.reserve(len(options.reference or "")) + _MIN_STRING_CONTENT
        limit = budget - 2
        # Escapes make the serialized string longer than the text: shrink until it fits.
        for _ in range(24):
            if limit < floor:
                return None
            result = cut(text, limit, strategy=options.strategy, head_ratio=options.head_ratio,
                         marker=options.marker, reference=options.reference)
            rendered = self.w.leaf(result.text)
            cost = self.w.cost(rendered)
            if cost <= budget:
                self.w.rendered_leaves += 1
                return rendered
            limit -= max(1, cost - budget)
        return None  # pragma: no cover - the loop converges long before

    def _object(
        self, value: dict[str, object], depth: int, budget: int, path: list[str], *, empty_ok: bool
    ) -> str | None:
        w = self.w
        base = 2 + w.cost(w.opening(depth)) + w.cost(w.closing(depth))
        between = w.cost(w.between(depth))
        key_separator = w.cost(w.key_separator)
        keys: list[str] = []
        sizes: list[int] = []
        least: list[int] = []
        used = [base]  # used[i]: the cost of the first i members at their least
        for key, item in value.items():
            cost = w.cost(w.leaf(key)) + key_separator + (between if keys else 0)
            if used[-1] + cost > budget:
                break
            size, low = self.smallest(item, depth + 1, budget, [*path, key])
            if used[-1] + cost + low > budget:
                break
            keys.append(key)
            sizes.append(size)
            least.append(low)
            used.append(used[-1] + cost + low)
        names = list(value)
        count = len(keys)
        note_key = elision_key(value)
        note, note_cost = "", 0
        while count < len(names):
            note = self.notes.elided(path, names[count], names[-1], len(names) - count, "key")
            note_cost = (w.cost(w.leaf(note_key)) + key_separator + w.cost(note)
                         + (between if count else 0))
            if used[count] + note_cost <= budget or count == 0:
                break
            count -= 1
        if count < len(names) and used[count] + note_cost > budget:
            return None
        if count == 0 and not empty_ok:
            return None
        spare = budget - used[count] - note_cost
        above_least = [s - low for s, low in zip(sizes[:count], least[:count], strict=True)]
        extra = water_fill(above_least, spare)
        members = []
        for index in range(count):
            key = keys[index]
            share = least[index] + extra[index]
            rendered = self.fit_or_note(value[key], depth + 1, share, [*path, key])
            members.append(w.leaf(key) + w.key_separator + rendered)
            w.rendered_leaves += 1
        if note:
            members.append(w.leaf(note_key) + w.key_separator + note)
        return w.join("{", members, depth)

    def _array(
        self, value: list[object], depth: int, budget: int, path: list[str], *, empty_ok: bool
    ) -> str | None:
        w = self.w
        n = len(value)
        base = 2 + w.cost(w.opening(depth)) + w.cost(w.closing(depth))
        between = w.cost(w.between(depth))
        # Room for the note, at its widest (the widest indexes it can name).
        last = str(n - 1)
        widest = w.cost(self.notes.elided(path, last, last, n, "item")) + between
        room = budget - base - widest
        if room < 0:
            return None
        head_room, tail_room = split_content(room, self.options.strategy,
                                             self.options.head_ratio)
        size = self._sizer(value, depth, room)
        head = head_used = 0
        while head < n and head_used + size(head) + (between if head else 0) <= head_room:
            head_used += size(head) + (between if head else 0)
            head += 1
        tail = tail_used = 0
        while tail < n - head and tail_used + size(n - 1 - tail) + between <= tail_room:
            tail_used += size(n - 1 - tail) + between
            tail += 1
        spare = room + widest - head_used - tail_used
        items = [self._whole(value[i], depth) for i in range(head)]
        ends = [self._whole(value[i], depth) for i in range(n - tail, n)]
        run = range(head, n - tail)
        if not run:  # pragma: no cover - the array would have fit whole
            return w.join("[", [*items, *ends], depth)
        if len(run) == 1:  # one item between: cut it to what is left, and no note
            share = spare - (between if head or tail else 0)
            found = self.fit(value[head], depth + 1, share, [*path, str(head)])
            if found is not None:
                return w.join("[", [*items, found, *ends], depth)
        if not head and not tail and len(run) > 1:
            # No item is whole: cut the first one (the last with the tail strategy).
            index = n - 1 if self.options.strategy == "tail" else 0
            share = spare - widest - between
            found = self.fit(value[index], depth + 1, share, [*path, str(index)])
            if found is not None:
                rest = range(1, n) if index == 0 else range(0, n - 1)
                note = self.notes.elided(path, str(rest[0]), str(rest[-1]), len(rest), "item")
                parts = [found, note] if index == 0 else [note, found]
                return w.join("[", parts, depth)
        if not head and not tail and not empty_ok:
            return None
        note = self.notes.elided(path, str(run[0]), str(run[-1]), len(run), "item")
        return w.join("[", [*items, note, *ends], depth)

    def _sizer(self, value: list[object], depth: int, cap: int) -> _Sizes:
        return _Sizes(self.w, value, depth + 1, cap)

    def _whole(self, item: object, depth: int) -> str:
        return self.w.render(item, depth + 1)


class _Sizes:
    """Bounded sizes of an array's items, measured once each and only when asked."""

    def __init__(self, writer: Writer, items: Sequence[object], depth: int, cap: int) -> None:
        self._writer, self._items, self._depth, self._cap = writer, items, depth, cap
        self._known: dict[int, int] = {}

    def __call__(self, index: int) -> int:
        known = self._known.get(index)
        if known is None:
            known = self._writer.size(self._items[index], self._depth, self._cap)
            self._known[index] = known
        return known


def cut_document(
    value: object,
    style: Style,
    budget: int,
    *,
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: Marker | None = None,
    reference: str | None = None,
    cost: Cost = plain_cost,
) -> str | None:
    """A parsed document cut to ``budget`` (in ``cost``), or ``None`` if it cannot be.

    The document's own layout is kept when it keeps at least 80% of the keys
    and scalars the compact layout keeps in the same budget; otherwise the
    result is compact.
    """
    options = _Options(strategy, head_ratio, marker or Marker(), reference)
    styled = _Cutter(Writer(style, cost), options)
    text = styled.root(value, budget)
    if style == COMPACT:
        return text
    compact = _Cutter(Writer(COMPACT, cost), options)
    compact_text = compact.root(value, budget)
    if text is not None and (
        styled.w.rendered_leaves >= _STYLE_SHARE * compact.w.rendered_leaves
    ):
        return text
    return compact_text


def cut_json(
    text: str,
    limit: int,
    *,
    format: Format = "auto",
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: Marker | None = None,
    reference: str | None = None,
    wire: bool = False,
    original_bytes: int | None = None,
) -> CapResult | None:
    """Cut ``text`` by structure if it is a JSON document; ``None`` if it is not one.

    ``limit`` bounds the UTF-8 bytes of the result, or with ``wire`` its bytes
    once JSON-escaped (as it travels inside a JSON message). A document within
    the limit comes back unchanged (the same object). ``original_bytes`` is the
    size the marker reports (by default the UTF-8 size of ``text``).
    """
    size = utf8_size(text)
    cost = wire_cost if wire else plain_cost
    parsed = parse_document(text, format, size=size)
    if parsed is None:
        return None
    original = size if original_bytes is None else original_bytes
    if (size if not wire else cost(text)) <= limit:
        return CapResult(text, False, original, size)
    value, style = parsed
    found = cut_document(value, style, limit, strategy=strategy, head_ratio=head_ratio,
                         marker=marker, reference=reference, cost=cost)
    if found is None:
        return None
    return CapResult(found, True, original, utf8_size(found), reference)


def cut_by_format(
    original: str | bytes,
    limit: int,
    *,
    text: str | None = None,
    format: Format = "auto",
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: Marker | None = None,
    reference: str | None = None,
    keep_lines: KeepLines | None = None,
) -> CapResult:
    """One text cut to ``limit``: by structure when it is a JSON document, else as text.

    ``text`` is ``original`` as valid text, when the caller has it. The one rule
    every path applies, so that all give the same bytes. Text that is JSON
    Lines is cut by whole lines; other text keeps ``keep_lines``, the lines a
    text cut keeps from its elided part.
    """
    if format != "text":
        if text is None:
            text = decode(original) if isinstance(original, bytes) else sanitize(original)
        original_bytes = len(original) if isinstance(original, bytes) else None
        result = cut_json(text, limit, format=format, strategy=strategy, head_ratio=head_ratio,
                          marker=marker, reference=reference, original_bytes=original_bytes)
        if result is not None:
            return result
        # Only JSON Lines needs the text as bytes here: its first bytes tell (a text's
        # first PREFIX_BYTES characters hold at least that many), so other text is
        # not encoded whole for nothing.
        if isinstance(original, bytes):
            size, prefix = len(original), original[:PREFIX_BYTES]
        else:
            size, prefix = utf8_size(text), text[:PREFIX_BYTES].encode("utf-8")[:PREFIX_BYTES]
        if size > limit and looks_like_json_lines(prefix):
            data = original if isinstance(original, bytes) else text.encode("utf-8")
            plan = plan_cut(limit, strategy=strategy, head_ratio=head_ratio, marker=marker,
                            reference=reference)
            lines = cut_json_lines(plan, data, data, original_bytes=len(data),
                                   prefix=data[:PREFIX_BYTES], reference=reference)
            if lines is not None:
                return lines
    return cut(original, limit, strategy=strategy, head_ratio=head_ratio, marker=marker,
               reference=reference, keep_lines=keep_lines)
