"""A tool result's ``structuredContent``: bounded on its own, cut by structure.

It is held to the result's bound (:func:`result_limit`) by itself, beside the
text blocks, so that a client reading only ``structuredContent`` and one reading
only ``content`` each get a bounded result. Over the bound it is stored (its
compact JSON: ``read_artifact`` reads it back by JSON Pointer) and cut with the
one structural cut: guided by the tool's ``outputSchema`` when the caller knows
one the cut can honour (:mod:`toolcap.core._schemacut`), so that the cut still
validates; otherwise the plain cut (:mod:`toolcap.core._jsoncut`). Either names
what it elided by pointer and the artifact. When no cut fits (the bound is too
small for even the least of it), it is dropped and a text block says where it
is kept; if the tool's schema was shown to the client, the result becomes an
error result too, since a client validates every other result against that
schema and refuses one without ``structuredContent`` (the official SDKs fail
the call), while an error result is passed to the model as it is.

A reader that kept the raw bytes of the long strings it decoded (the proxy's
scanner) sets :data:`RAW_STRINGS` while the result is bounded: the stored
compact JSON then takes those bytes where they already are that serialization
(:func:`toolcap.core._jsonraw.dumps_utf8`), the same bytes, without serializing
the strings again.

A big ``structuredContent`` over the bound is stored on a thread of its own
while the text blocks are bounded (:func:`store_early`): SHA-256 and the file
writes let go of the interpreter's lock, so the two originals are written side
by side instead of one after the other. Its reference is taken, and recorded,
where it was before; the output is the same.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..core._json import json_size
from ..core._jsoncut import cut_document
from ..core._jsondoc import COMPACT, MAX_STRUCTURAL_BYTES, parse_document, parses_back
from ..core._jsonraw import RawStrings, dumps_utf8
from ..core._media import not_sent_note
from ..core._refs import MAX_REFERENCE_LENGTH
from ..core._schemacut import cut_to_schema
from ..core._schemaguide import Node
from ..core._sizes import human_size
from ._mcpbound import Bounder, Slot, result_limit

__all__ = ["RAW_STRINGS", "Early", "Room", "bound_structured", "raw_strings", "reserve_note",
           "store_early"]

#: The raw bytes of the long strings of the message being bounded on this thread, if
#: its reader kept them (see the module doc); ``None`` otherwise.
RAW_STRINGS: ContextVar[RawStrings | None] = ContextVar("toolcap_raw_strings", default=None)


@contextmanager
def raw_strings(raw: RawStrings | None) -> Iterator[None]:
    """Let what is bounded within take long strings' bytes from ``raw``."""
    token = RAW_STRINGS.set(raw)
    try:
        yield
    finally:
        RAW_STRINGS.reset(token)


#: A structuredContent of at least this many bytes over its bound is stored on a thread
#: (:func:`store_early`); below it a thread costs more than the overlap saves.
EARLY_MIN = 1 << 20


class Early:
    """A ``structuredContent``'s compact JSON, made before the text blocks are bounded,
    and its put, when it was started then on a thread."""

    __slots__ = ("_outcome", "_thread", "original", "size")

    def __init__(self, original: bytes) -> None:
        self.original = original
        self.size = len(original)
        self._outcome: list[str | None] = []
        self._thread: threading.Thread | None = None

    def start(self, put: Callable[[bytes], str | None]) -> None:
        """Store the original with ``put`` on a thread of its own."""
        self._thread = threading.Thread(target=lambda: self._outcome.append(put(self.original)),
                                        name="toolcap-store-structured", daemon=True)
        self._thread.start()

    def reference(self, put: Callable[[bytes], str | None]) -> str | None:
        """The original's reference (``None``: not stored, a WARNING said why): the
        started put's, once it is done, else ``put``'s now."""
        if self._thread is None:
            return put(self.original)
        self._thread.join()
        return self._outcome[0] if self._outcome else None


def store_early(work: Bounder, structured: Any) -> Early | None:
    """``structured``'s compact JSON, and its put started if it will be stored (see the
    module doc); call it before the text blocks are bounded and hand the result to
    :func:`bound_structured`.

    Only for a value whose long strings' bytes are at hand (:data:`RAW_STRINGS`),
    else ``None`` (:func:`bound_structured` measures it); the put starts when its
    compact JSON is over the bound and at least :data:`EARLY_MIN` bytes.
    """
    raw = RAW_STRINGS.get()
    bound = result_limit(work.policy, work.tool, work.wire_budget)
    if not raw or structured is None or bound is None:
        return None
    try:
        early = Early(dumps_utf8(structured, raw, work.measured))
    except (RecursionError, TypeError, ValueError):
        return None  # bound_structured meets it again and does what it does with it
    if work.spill_on and early.size > bound and early.size >= EARLY_MIN:
        policy, tool = work.policy, work.tool
        _ = policy.sink  # opened here, on one thread, if it is not open yet
        early.start(lambda data: policy.spill(data, tool=tool))
    return early


@dataclass(frozen=True)
class Room:
    """Room kept beside the text blocks for the note about a ``structuredContent``
    over its bound (:func:`reserve_note`)."""

    #: Whether the note that it was cut is sent: only where nothing else says the
    #: result was cut (no medium replaced, the text within the limit beside it).
    said: bool


def reserve_note(work: Bounder, structured: Any, guide: Node | None, slots: list[Slot],
                 early: Early | None = None) -> Room | None:
    """Before the text blocks (``slots``) are cut: keep room beside them for the note
    :func:`bound_structured` will add about ``structured`` (:meth:`Bounder.reserve`),
    so that the text and the notes together stay within the limit; ``None`` when
    ``structured`` is within its bound (no note).

    The note's kind and widest size are known before the cut: that it was not sent
    (where the cut may find nothing: nested too deeply, not an object, over the
    structural cut's size, or a schema whose least is over the bound, tried with
    the longest reference), or that it was cut (when that is said at all).
    """
    bound = result_limit(work.policy, work.tool, work.wire_budget)
    if structured is None or bound is None:
        return None
    suffix = _SCHEMA_UNMET if guide is not None else ""
    try:
        size = early.size if early is not None else json_size(structured, work.measured)
    except RecursionError:
        work.reserve(_DEEP + suffix, json_size({"type": "text", "text": _DEEP + suffix}))
        return Room(False)
    if size <= bound:
        return None
    said = not work.changed and work.fits_whole(slots)
    widest = "f" * MAX_REFERENCE_LENGTH
    notes = [_cut_note(size, _WIDEST_SIZE, bound, widest)] if said else []
    if _may_find_nothing(work, structured, size, bound, guide, early, widest):
        notes += [not_sent_note("structuredContent", size, bound, reference=reference,
                                tried=True, limit_name="limit") + suffix
                  for reference in (widest, None)]
    if notes:
        note = max(notes, key=len)  # all ASCII: the longest is the widest
        work.reserve(note, json_size({"type": "text", "text": note}))
    return Room(said)


def _may_find_nothing(work: Bounder, structured: Any, size: int, bound: int,
                      guide: Node | None, early: Early | None, reference: str) -> bool:
    """Whether :func:`_cut` may find no cut of ``structured`` (``size`` bytes) within
    ``bound``; a schema's cut is tried (no I/O) with ``reference``, the longest."""
    if not isinstance(structured, dict) or size > MAX_STRUCTURAL_BYTES:
        return True
    if guide is None:
        return False  # an object's plain cut can always keep "{}" and its note
    original = early.original if early is not None else dumps_utf8(structured)
    return _cut(work, structured, original, bound, reference, guide) is None


def bound_structured(work: Bounder, new: dict[str, Any], structured: Any,
                     guide: Node | None, early: Early | None = None,
                     room: Room | None = None) -> None:
    """Bound ``new["structuredContent"]`` (``structured``) in place; see the module doc.

    ``early``: what :func:`store_early` made and started for ``structured``, if anything;
    ``room``: what :func:`reserve_note` kept for it before the text was cut.
    """
    bound = result_limit(work.policy, work.tool, work.wire_budget)
    if bound is None:
        return
    try:
        _bound(work, new, structured, guide, bound, early, room is not None and room.said)
    except RecursionError:  # nested deeper than Python can walk: neither measured nor kept
        work.cut_by(work.cap_of(bound))
        new.pop("structuredContent", None)
        _send_without(new, _DEEP, guide)


_DEEP = "[toolcap: structuredContent not sent: nested too deeply to measure]"
#: The widest size ``human_size`` writes below 1024 GB: a kept part is never wider.
_WIDEST_SIZE = "1023.9 KB"


def _cut_note(size: int, kept: str, bound: int, reference: str | None) -> str:
    where = f"; full: {reference}" if reference else ""
    return (f"[toolcap: structuredContent cut from {human_size(size)} to {kept}, "
            f"the {human_size(bound)} limit{where}]")


def _bound(work: Bounder, new: dict[str, Any], structured: Any, guide: Node | None,
           bound: int, early: Early | None, said: bool) -> None:
    raw = RAW_STRINGS.get()
    original: bytes | None = None
    if early is not None:
        original, size = early.original, early.size
    elif raw:
        # Its long strings' bytes are at hand: serializing it is about as cheap as
        # measuring it, and measures them for the cut's record.
        original = dumps_utf8(structured, raw, work.measured)
        size = len(original)
    else:
        size = json_size(structured, work.measured)
    if size <= bound:
        return
    cap = work.cap_of(bound)
    work.cut_by(cap)
    if original is None:
        original = dumps_utf8(structured)

    def spill(data: bytes) -> str | None:
        return work.policy.spill(data, tool=work.tool)

    reference = (spill(original) if early is None else early.reference(spill)) if (
        work.spill_on) else None
    work.record(reference)
    found = _cut(work, structured, original, bound, reference, guide)
    if found is None:
        del new["structuredContent"]
        _send_without(new, not_sent_note("structuredContent", size, bound, reference=reference,
                                         tried=work.spill_on, limit_name="limit"), guide)
        return
    new["structuredContent"] = json.loads(found)
    if not said:
        return  # the text blocks' marker, or a medium's note, says the result was cut
    note = _cut_note(size, human_size(len(found.encode("utf-8"))), bound, reference)
    new["content"] = [*new["content"], {"type": "text", "text": note}]


_SCHEMA_UNMET = (" An error result: no structuredContent within the limit matches the tool's"
                 " output schema; narrow the query or raise the tool's size_threshold.")


def _send_without(new: dict[str, Any], note: str, guide: Node | None) -> None:
    """``new`` without its ``structuredContent``: ``note`` says so, and a result of a
    tool whose schema the client validates against (``guide``) becomes an error result."""
    if guide is not None:
        note += _SCHEMA_UNMET
        new["isError"] = True
    new["content"] = [*new["content"], {"type": "text", "text": note}]


def _cut(work: Bounder, structured: Any, original: bytes, bound: int, reference: str | None,
         guide: Node | None) -> str | None:
    """The compact JSON of the cut object (``original``, UTF-8, serializes ``structured``),
    or ``None`` when none fits."""
    if len(original) > MAX_STRUCTURAL_BYTES:
        return None  # over the structural cut's size (parse_document would say so)
    if isinstance(structured, dict) and parses_back(structured):
        value = structured  # parsing its serialization would give it back (as the proxy's does)
    else:
        parsed = parse_document(original.decode("utf-8"), "json")
        if parsed is None or not isinstance(parsed[0], dict):
            return None  # not an object (invalid MCP) or over the structural cut's size
        value = parsed[0]
    policy = work.policy.for_tool(work.tool)
    options: dict[str, Any] = {"strategy": policy.strategy, "head_ratio": policy.head_ratio,
                               "marker": policy.marker, "reference": reference}
    if guide is not None:
        return cut_to_schema(value, guide, bound, **options)
    found = cut_document(value, COMPACT, bound, **options)
    return found if found is not None and found.startswith("{") else None
