"""The marker: the line that stands where a cut removed content.

Users and scripts match on it, so it is one documented template. Placeholders:

``{original}``
    the size of the full original, as :func:`human_size` prints it;
``{kept}``
    the size of the original content kept around the marker;
``{dropped}``
    the size of what was cut;
``{where}``
    ``"; full output: toolcap:…"`` when the original was stored, else empty;
``{reference}``
    the bare artifact reference, or empty.
"""

from __future__ import annotations

import functools
import operator
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._errors import ConfigError
from ._refs import MAX_REFERENCE_LENGTH, REFERENCE_LENGTH
from ._sizes import human_size, parse_size

__all__ = [
    "DEFAULT_MARKER",
    "MAX_MARKER_BYTES",
    "Marker",
    "Rendered",
]

DEFAULT_MARKER = (
    "[toolcap: output truncated, kept {kept} of {original}{where}."
    " Narrow the query (a filter, a range, a search) to see the rest.]"
)
#: No rendering of a marker may exceed this many UTF-8 bytes.
MAX_MARKER_BYTES = 200
#: Used when an allocation is too small for the configured marker.
SHORT_MARKER = "[toolcap: truncated]"

_ORDER = ("original", "kept", "dropped", "where", "reference")  # their numbers, positionally
_FIELDS = frozenset(_ORDER)
# The widest value human_size gives below 1024 GB: reserving room for it makes the
# cut independent of the sizes it reports, so a stream can be cut before its end.
_WIDEST_SIZE = "1023.9 KB"
_WHERE = "; full output: "
# What each placeholder's value looks like, to read a rendering back (bounded: no
# backtracking to speak of, whatever text it is searched in).
_SIZE = r"\d{1,4}(?:\.\d)? [KMG]?B"
_REFERENCE = f"[^\\s\\]\\[;]{{1,{MAX_REFERENCE_LENGTH}}}"
_VALUES = {"original": _SIZE, "kept": _SIZE, "dropped": _SIZE,
           "where": f"(?:{re.escape(_WHERE)}{_REFERENCE})?", "reference": f"(?:{_REFERENCE})?"}


@dataclass(frozen=True)
class Rendered:
    """One rendering of a marker found in a text: where, and what it says."""

    start: int
    end: int
    original: str | None  # the sizes as human_size printed them (None: not in the template)
    kept: str | None
    reference: str | None


@dataclass(frozen=True)
class Marker:
    """A validated marker template."""

    template: str = DEFAULT_MARKER

    @classmethod
    def parse(cls, template: str, *, key: str | None = None, file: str | None = None) -> Marker:
        """Check ``template`` (known placeholders only, at most 200 bytes rendered)."""
        if not isinstance(template, str):
            raise ConfigError(f"a marker must be a string, got {template!r}", key=key, file=file)
        try:
            template.encode("utf-8")
            parsed = list(string.Formatter().parse(template))
        except (ValueError, UnicodeEncodeError) as error:
            raise ConfigError(
                f"invalid marker template {template[:60]!r}: {error}", key=key, file=file
            ) from None
        fields = {name for _, name, _, _ in parsed if name is not None}
        for _, name, spec, conversion in parsed:
            if conversion not in (None, "s", "r", "a"):
                raise ConfigError(f"unknown conversion !{conversion[:20]} in the marker"
                                  " (use !s, !r, !a or none)", key=key, file=file)
            # A width such as {kept:>4000000000} would be built before its size could be
            # checked: placeholders take no spec, so a marker's size is known in advance.
            if spec:
                raise ConfigError(
                    f"placeholder {{{name}}} in the marker takes no format spec"
                    f" (write {{{name}}} without ':{spec[:20]}')",
                    key=key,
                    file=file,
                )
        if len(template) > 4 * MAX_MARKER_BYTES:  # no need to look further: it cannot fit
            raise ConfigError(f"marker is over the {MAX_MARKER_BYTES}-byte maximum",
                              key=key, file=file)
        unknown = fields - _FIELDS
        if unknown:
            raise ConfigError(
                f"unknown placeholder {{{sorted(unknown)[0][:40]}}} in marker {template[:60]!r}"
                f" (known: {', '.join('{' + f + '}' for f in sorted(_FIELDS))})",
                key=key,
                file=file,
            )
        marker = cls(template)
        widest = marker.reserve(REFERENCE_LENGTH)
        if widest > MAX_MARKER_BYTES:
            raise ConfigError(
                f"marker renders to {widest} bytes, over the {MAX_MARKER_BYTES}-byte maximum",
                key=key,
                file=file,
            )
        return marker

    def render(self, *, original: int, kept: int, reference: str | None) -> str:
        """The marker text for one cut."""
        dropped = human_size(max(0, original - kept)) if self._shows_dropped else ""
        printf = self._printf
        if printf is None:
            return self._format(human_size(original), human_size(kept), dropped, reference)
        # _format's usual case inline: a marker is rendered on every cut
        template, pick = printf
        return template % pick((human_size(original), human_size(kept), dropped,
                                _where(reference), reference or ""))

    def find(self, text: str) -> list[Rendered]:
        """Every rendering of this marker in ``text``, in order ([] for a template
        whose renderings cannot be read back: one with a conversion such as ``!r``)."""
        finder = self._finder
        if finder is None:
            return []
        found = []
        for match in finder.finditer(text):
            values = match.groupdict()
            where = values.get("where")
            reference = values.get("reference") or (where[len(_WHERE):] if where else None)
            found.append(Rendered(match.start(), match.end(), values.get("original"),
                                  values.get("kept"), reference or None))
        return found

    def restate(self, seen: Rendered, original: str) -> str:
        """The rendering ``seen`` saying ``original`` (as :func:`human_size` prints a
        size) for the original's size; what it kept and its reference unchanged."""
        kept = seen.kept or ""
        dropped = ""
        if self._shows_dropped:
            dropped = human_size(max(0, parse_size(original) - parse_size(kept or "0")))
        return self._format(original, kept, dropped, seen.reference)

    @functools.cached_property
    def _finder(self) -> re.Pattern[str] | None:
        try:
            parsed = list(string.Formatter().parse(self.template))
        except ValueError:
            return None
        pieces: list[str] = []
        named: set[str] = set()
        for literal, name, _, conversion in parsed:
            pieces.append(re.escape(literal))
            if name is None:
                continue
            if conversion or name not in _FIELDS:
                return None
            # A placeholder used twice says the same thing twice.
            pieces.append(f"(?P={name})" if name in named else f"(?P<{name}>{_VALUES[name]})")
            named.add(name)
        if not named:
            return None  # a marker with no placeholder says nothing to read back
        return re.compile("".join(pieces))

    @functools.cached_property
    def _shows_dropped(self) -> bool:
        return any(name == "dropped" for _, name, _, _ in string.Formatter().parse(self.template))

    @functools.lru_cache(maxsize=64)  # noqa: B019 - markers are few, frozen and long-lived
    def reserve(self, reference_length: int = 0) -> int:
        """The most bytes this marker takes with a reference of that many bytes (0: none)."""
        reference = "f" * reference_length if reference_length else None
        text = self._format(_WIDEST_SIZE, _WIDEST_SIZE, _WIDEST_SIZE, reference)
        return len(text.encode("utf-8"))

    @functools.cached_property
    def _printf(self) -> tuple[str, Callable[[Sequence[str]], object]] | None:
        """The template for ``%`` formatting, and which values its fields take in turn.

        ``%`` costs a third of ``str.format`` by position (itself half the keyword
        call), and every cut renders a marker. None when a field is not a plain
        known name: then the keyword call raises or formats exactly as it always did.
        """
        try:
            parsed = list(string.Formatter().parse(self.template))
        except ValueError:
            return None
        out, order = [], []
        for literal, name, spec, conversion in parsed:
            out.append(literal.replace("%", "%%"))  # parse() already unescaped {{ and }}
            if name is None:
                continue
            if name not in _ORDER or spec or conversion not in (None, "s", "r", "a"):
                return None
            out.append("%" + (conversion or "s"))
            order.append(_ORDER.index(name))
        if len(order) > 1:  # itemgetter of two or more gives the tuple % takes
            return "".join(out), operator.itemgetter(*order)
        picked = tuple(order)
        return "".join(out), lambda values: tuple(values[index] for index in picked)

    def _format(self, original: str, kept: str, dropped: str, reference: str | None) -> str:
        printf = self._printf
        if printf is not None:
            template, pick = printf
            return template % pick((original, kept, dropped, _where(reference), reference or ""))
        return self.template.format(original=original, kept=kept, dropped=dropped,
                                    where=_where(reference), reference=reference or "")


def _where(reference: str | None) -> str:
    """What ``{where}`` says: where the full output is, when it was stored."""
    return f"{_WHERE}{reference}" if reference else ""
