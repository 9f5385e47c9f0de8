"""The structural cut guided by an output schema, so that the cut still validates.

Where the guide (:mod:`toolcap.core._schemaguide`) allows it, this is the plain
structural cut (:mod:`toolcap.core._jsoncut`), with its notes and its string
cut; where it does not, it keeps instead: a required member is never dropped,
an array keeps at least ``minItems`` items, a note string stands only where a
plain string validates, a constrained string or a number is kept whole. The
budget is shared as the plain cut shares it (water-fill over what each member
costs above the least it can cost). ``None`` when even the least the schema
allows is over the budget. Pure.
"""

from __future__ import annotations

import json

from ._allocate import water_fill
from ._jsoncut import _Cutter, _Options
from ._jsondoc import COMPACT, Writer, plain_cost, pointer
from ._jsonnotes import elision_key
from ._marker import Marker
from ._schemaguide import Node, accepts_note, node_for_value
from ._strategy import Strategy, split_content

__all__ = ["cut_to_schema"]


class _Guided:
    def __init__(self, cutter: _Cutter) -> None:
        self.c = cutter
        self.w = cutter.w
        #: Pointers of what was dropped where no note could stand.
        self.silent: list[str] = []

    def note(self, text: str) -> str:
        return self.c.notes.note(text)

    # -- the least a value can cost ------------------------------------------------

    def least(self, value: object, node: Node | None, cap: int, path: list[str]) -> int:
        """The least ``value`` can cost at ``node`` (``cap + 1`` when over ``cap``)."""
        size = self.w.size(value, 0, cap)
        governing = None if node is None else node_for_value(node, value)
        if governing is None:
            return size  # the value does not match its schema: kept as it is, or not at all
        if governing.kind == "any":
            return min(size, self.c.smallest(value, 0, cap, path)[1])
        if governing.kind == "text" and isinstance(value, str):
            return min(size, self.w.cost(self.c.notes.collapsed(value, path)))
        if size <= 2:
            return size
        if governing.kind == "object" and isinstance(value, dict):
            total = 2
            for key in self._mandatory(value, governing):
                total += self.w.cost(self.w.leaf(key)) + 2 + self.least(
                    value[key], self._child(governing, key), cap - total, [*path, key])
                if total > cap:
                    return cap + 1
            return total
        if governing.kind == "array" and isinstance(value, list):
            total = 2
            for index in range(min(governing.min_items, len(value))):
                total += 1 + self.least(value[index], governing.items, cap - total,
                                        [*path, str(index)])
                if total > cap:
                    return cap + 1
            return total
        return size

    @staticmethod
    def _child(node: Node, key: str) -> Node | None:
        return node.properties.get(key, node.additional)

    @staticmethod
    def _mandatory(value: dict[str, object], node: Node) -> list[str]:
        keys = [key for key in value if key in node.required]
        if len(keys) < node.min_properties:  # the first members make up the number
            extra = [key for key in value if key not in node.required]
            keys = [key for key in value if key in keys
                    or key in extra[: node.min_properties - len(keys)]]
        return keys

    # -- fitting -------------------------------------------------------------------

    def fit(self, value: object, node: Node | None, budget: int, path: list[str]) -> str | None:
        if self.w.size(value, 0, budget) <= budget:
            return self.w.render(value)
        governing = None if node is None else node_for_value(node, value)
        if governing is None or governing.kind == "keep":
            return None
        if governing.kind == "any":
            found = self.c.fit(value, 0, budget, path)
            if found is None and self.w.cost(self.c.notes.collapsed(value, path)) <= budget:
                return self.c.notes.collapsed(value, path)
            return found
        if governing.kind == "text" and isinstance(value, str):
            found = self.c._string(value, budget)
            if found is None and self.w.cost(self.c.notes.collapsed(value, path)) <= budget:
                return self.c.notes.collapsed(value, path)
            return found
        if governing.kind == "object" and isinstance(value, dict):
            return self._object(value, governing, budget, path)
        if governing.kind == "array" and isinstance(value, list):
            return self._array(value, governing, budget, path)
        return None

    def _object(self, value: dict[str, object], node: Node, budget: int,
                path: list[str]) -> str | None:
        w = self.w
        mandatory = set(self._mandatory(value, node))
        key_cost = {key: w.cost(w.leaf(key)) + 2 for key in value}  # "key": and a comma
        note_key = elision_key(value)
        note_ok = note_key not in node.properties and accepts_note(node.additional)
        dropped = len(value) - len(mandatory)
        note = self.note(f"{dropped} keys elided from {pointer(path) or '/'}")
        note_cost = key_cost.get(note_key, w.cost(w.leaf(note_key)) + 2) + w.cost(note)
        used = 2 + sum(key_cost[key] + self.least(value[key], self._child(node, key),
                                                  budget, [*path, key]) for key in mandatory)
        if note_ok:
            used += note_cost
        if used > budget:
            return None
        kept: list[str] = []
        least: dict[str, int] = {}
        for key, item in value.items():
            child = self._child(node, key)
            if key in mandatory:
                least[key] = self.least(item, child, budget, [*path, key])
                kept.append(key)
                continue
            low = self.least(item, child, budget, [*path, key])
            if used + key_cost[key] + low <= budget:
                used += key_cost[key] + low
                least[key] = low
                kept.append(key)
        elided = len(value) - len(kept)
        if elided and note_ok:
            note = self.note(f"{elided} keys elided from {pointer(path) or '/'}")
        elif note_ok:
            used -= note_cost
        elif elided:
            self.silent.append(pointer(path) or "/")
        sizes = [w.size(value[key], 0, budget) - least[key] for key in kept]
        extra = water_fill(sizes, budget - used)
        members = []
        for key, more in zip(kept, extra, strict=True):
            rendered = self.fit(value[key], self._child(node, key), least[key] + more,
                                [*path, key])
            if rendered is None:
                return None
            members.append(w.leaf(key) + ":" + rendered)
        if elided and note_ok:
            members.append(w.leaf(note_key) + ":" + note)
        return w.join("{", members, 0)

    def _array(self, value: list[object], node: Node, budget: int,
               path: list[str]) -> str | None:
        w = self.w
        n = len(value)
        note_ok = accepts_note(node.items)
        last = str(n - 1)
        note_room = (w.cost(self.c.notes.elided(path, last, last, n, "item")) + 1) if note_ok else 0
        room = budget - 2 - note_room
        if room < 0:
            return None
        head_room, tail_room = split_content(room, self.c.options.strategy,
                                             self.c.options.head_ratio)
        head = used = 0
        while head < n and used + w.size(value[head], 0, room) + (1 if head else 0) <= head_room:
            used += w.size(value[head], 0, room) + (1 if head else 0)
            head += 1
        tail = tail_used = 0
        while tail < n - head and tail_used + w.size(value[n - 1 - tail], 0, room) + 1 <= tail_room:
            tail_used += w.size(value[n - 1 - tail], 0, room) + 1
            tail += 1
        if head + tail >= max(node.min_items, 1):
            items = [w.render(value[i]) for i in range(head)]
            ends = [w.render(value[i]) for i in range(n - tail, n)]
            run = range(head, n - tail)
            middle = [self.c.notes.elided(path, str(run[0]), str(run[-1]), len(run), "item")] if (
                note_ok and run) else []
            if run and not note_ok:
                self.silent.append(pointer(path) or "/")
            return w.join("[", [*items, *middle, *ends], 0)
        found = self._first_items(value, node, budget, note_room, path)
        if found is None and node.min_items == 0:
            # Not even one item fits cut: the array is empty but for its note.
            if not note_ok:
                self.silent.append(pointer(path) or "/")
            notes = [self.c.notes.elided(path, "0", last, n, "item")] if note_ok else []
            return w.join("[", notes, 0)
        return found

    def _first_items(self, value: list[object], node: Node, budget: int, note_room: int,
                     path: list[str]) -> str | None:
        """The first items the schema asks for (at least one), cut to share the budget."""
        w = self.w
        n = len(value)
        count = min(n, max(node.min_items, 1))
        lows = [self.least(value[i], node.items, budget, [*path, str(i)]) for i in range(count)]
        spare = budget - 2 - note_room - sum(lows) - (count - 1)
        if spare < 0:
            return None
        above = [w.size(value[i], 0, budget) - lows[i] for i in range(count)]
        shares = [low + more for low, more in zip(lows, water_fill(above, spare), strict=True)]
        parts = []
        for index, share in enumerate(shares):
            rendered = self.fit(value[index], node.items, share, [*path, str(index)])
            if rendered is None:
                return None
            parts.append(rendered)
        if note_room and count < n:
            parts.append(self.c.notes.elided(path, str(count), str(n - 1), n - count, "item"))
        elif count < n:
            self.silent.append(pointer(path) or "/")
        return w.join("[", parts, 0)


def cut_to_schema(
    value: object,
    guide: Node,
    budget: int,
    *,
    strategy: Strategy = "head_tail",
    head_ratio: float = 0.2,
    marker: Marker | None = None,
    reference: str | None = None,
) -> str | None:
    """``value`` (a parsed document) in compact JSON within ``budget`` UTF-8 bytes,
    cut so that it still validates where ``guide`` says what validates; ``None``
    when it cannot be."""
    options = _Options(strategy, head_ratio, marker or Marker(), reference)
    if guide.kind == "any":  # no constraint: the plain cut, whose root stays a container
        found = _Cutter(Writer(COMPACT, plain_cost), options).root(value, budget)
        return found if found is None or plain_cost(found) <= budget else None
    guided = _Guided(_Cutter(Writer(COMPACT, plain_cost), options))
    found = guided.fit(value, guide, budget, [])
    if found is not None and guided.silent and isinstance(value, dict):
        # Parts were dropped where no note could stand: the root says so, if it may.
        found = _with_root_note(value, guide, budget, options) or found
    if found is None or plain_cost(found) > budget:
        return None
    return found


def _with_root_note(value: dict[str, object], guide: Node, budget: int,
                    options: _Options) -> str | None:
    """The cut again, in less room, with a root member that says where parts were dropped."""
    guided = _Guided(_Cutter(Writer(COMPACT, plain_cost), options))
    key = elision_key(value)
    if key in guide.properties or not accepts_note(guide.additional):
        return None
    widest = guided.note(f"parts elided at {len(value) + 99999} places, first at /")
    room = budget - plain_cost(guided.w.leaf(key)) - 2 - plain_cost(widest) - 160
    found = guided.fit(value, guide, room, []) if room > 2 else None
    if found is None or not guided.silent or not found.startswith("{"):
        return None
    if key in json.loads(found):  # the root's own elision member is there already
        return None
    first = guided.silent[0]
    first = first if len(first) <= 160 else "/"
    note = guided.note(f"parts elided at {len(guided.silent)} places, first at {first}")
    body = found[1:-1]
    return "{" + (body + "," if body else "") + guided.w.leaf(key) + ":" + note + "}"
