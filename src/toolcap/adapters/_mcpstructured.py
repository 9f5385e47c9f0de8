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
from typing import Any

from ..core._json import json_size
from ..core._jsoncut import cut_document
from ..core._jsondoc import COMPACT, MAX_STRUCTURAL_BYTES, parse_document, parses_back
from ..core._jsonraw import RawStrings, dumps_utf8
from ..core._media import not_sent_note
from ..core._schemacut import cut_to_schema
from ..core._schemaguide import Node
from ..core._sizes import human_size
from ._mcpbound import Bounder, result_limit

__all__ = ["RAW_STRINGS", "Early", "bound_structured", "raw_strings", "store_early"]

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


def bound_structured(work: Bounder, new: dict[str, Any], structured: Any,
                     guide: Node | None, early: Early | None = None) -> None:
    """Bound ``new["structuredContent"]`` (``structured``) in place; see the module doc.

    ``early``: what :func:`store_early` made and started for ``structured``, if anything.
    """
    bound = result_limit(work.policy, work.tool, work.wire_budget)
    if bound is None:
        return
    try:
        _bound(work, new, structured, guide, bound, early)
    except RecursionError:  # nested deeper than Python can walk: neither measured nor kept
        work.cut_by(_cap(work, bound))
        new.pop("structuredContent", None)
        note = "[toolcap: structuredContent not sent: nested too deeply to measure]"
        _send_without(new, note, guide)


def _bound(work: Bounder, new: dict[str, Any], structured: Any, guide: Node | None,
           bound: int, early: Early | None) -> None:
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
    text_was_cut = work.changed
    cap = _cap(work, bound)
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
    if text_was_cut:
        return  # the text blocks carry their own marker
    where = f"; full: {reference}" if reference else ""
    note = (f"[toolcap: structuredContent cut from {human_size(size)} to "
            f"{human_size(len(found.encode('utf-8')))}, the {human_size(bound)} limit{where}]")
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


def _cap(work: Bounder, bound: int) -> str:
    """The name of the limit that ``bound`` is."""
    if bound == work.policy.for_tool(work.tool).size_threshold:
        return "size_threshold"
    return "wire_budget" if bound == work.wire_budget else "batch_ceiling"


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
