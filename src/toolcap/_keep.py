"""A tool's ``keep_lines``, compiled: patterns run with RE2, the built-in set with or without it.

The cut (:mod:`toolcap.core._keeplines`) is pure and takes its matchers from
here. User patterns come from configuration and run on text we did not write:
each is compiled by :func:`toolcap.store._regex.compile_pattern` (RE2, linear
in the text; without the ``re2`` extra, plain text only). The built-in set is
literals with small checks, so it needs neither: one RE2 search for their
alternation finds where any occurs (300-800 MB/s), and once a process has
scanned :data:`FAST_AFTER` bytes, Hyperscan (the ``hyperscan`` extra) takes over
(several GB/s); without either, one ``bytes.find`` scan for each of ten anchors.
All give the same lines: the scan only finds where to look, and each line it
points at is checked against the needles themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ._literals import have_hyperscan, literal_scan
from .core._errors import ConfigError
from .core._keeplines import DEFAULT_KEEP_LINES, DEFAULT_NEEDLES, KeepLines, LineMatcher, Needle
from .store._regex import Matcher, compile_pattern, have_re2

__all__ = ["DEFAULT_SHARE", "check_share", "compiled_keep_lines", "default_scans", "keep_lines"]

DEFAULT_SHARE = 0.25
_RE2_SYNTAX = frozenset("\\.+*?()|[]{}^$")


@dataclass(frozen=True)
class _Pattern:
    """A user pattern: RE2 (or plain text) finds the lines, and checks each alone."""

    matcher: Matcher

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        return self.matcher.first(data, pos, endpos)

    def matches(self, line: bytes) -> bool:
        return next(iter(self.matcher.finditer(line, 0, len(line))), None) is not None


class _Scan(Protocol):
    def first(self, data: bytes, pos: int, endpos: int) -> int | None: ...


@dataclass(frozen=True)
class _AnyNeedle:
    """The built-in set with one scan (Hyperscan or RE2) for all its literals."""

    scan: _Scan
    needles: tuple[Needle, ...]

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        return self.scan.first(data, pos, endpos)

    def matches(self, line: bytes) -> bool:
        return any(needle.matches(line) for needle in self.needles)


def _literal(text: bytes) -> str:
    return "".join("\\" + c if c in _RE2_SYNTAX else "\\t" if c == "\t" else c
                   for c in text.decode("ascii"))


class _Upgrading:
    """RE2's scan until the texts scanned add up to :data:`FAST_AFTER`, then Hyperscan's.

    Loading Hyperscan costs about what RE2 takes to scan a few MB, so short
    outputs never load it and long streams soon scan several times faster. The
    two find the same lines (each place is checked against the needles).
    """

    def __init__(self, slow: _Scan, literals: Sequence[bytes]) -> None:
        self._scan = slow
        self._literals = literals
        self._scanned = 0

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        if self._literals:
            self._scanned += endpos - pos
            if self._scanned >= FAST_AFTER:
                fast, self._literals = literal_scan(self._literals), ()
                self._scan = fast or self._scan
        return self._scan.first(data, pos, endpos)


#: Bytes the built-in set scans with RE2 before Hyperscan is loaded (with its extra).
FAST_AFTER = 8 << 20


def default_scans() -> dict[str, tuple[LineMatcher, ...]]:
    """The built-in set's one-pass scan for each installed engine, fastest first."""
    scans: dict[str, tuple[LineMatcher, ...]] = {}
    literals = literal_scan([needle.text for needle in DEFAULT_NEEDLES])
    if literals is not None:
        scans["hyperscan"] = (_AnyNeedle(literals, DEFAULT_NEEDLES),)
    if have_re2():
        scans["re2"] = (_AnyNeedle(_re2_scan(), DEFAULT_NEEDLES),)
    return scans


def _re2_scan() -> Matcher:
    return compile_pattern("|".join(_literal(needle.text) for needle in DEFAULT_NEEDLES))


def _default_matchers() -> tuple[LineMatcher, ...]:
    literals = [needle.text for needle in DEFAULT_NEEDLES]
    if have_re2():
        scan = _Upgrading(_re2_scan(), literals if have_hyperscan() else ())
        return (_AnyNeedle(scan, DEFAULT_NEEDLES),)
    fast = literal_scan(literals)
    if fast is not None:
        return (_AnyNeedle(fast, DEFAULT_NEEDLES),)
    return DEFAULT_KEEP_LINES.matchers  # one bytes.find scan per anchor


_DEFAULT_MATCHERS = _default_matchers()


def check_share(value: object, *, key: str | None = None, file: str | None = None) -> float:
    """Return ``value`` if it is a share of a budget (above 0, at most 1), else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"keep_lines_share must be above 0 and at most 1, got {value!r}",
                          key=key, file=file)
    return float(value)


def keep_lines(
    patterns: Sequence[str] | None = None,
    share: float = DEFAULT_SHARE,
    *,
    key: str | None = None,
    file: str | None = None,
) -> KeepLines:
    """The lines a ``head_tail`` or ``tail`` cut keeps from its elided part.

    Args:
        patterns: regular expressions (RE2 syntax; a line is kept if any matches
            somewhere in it); ``None`` for the built-in set; empty for none.
        share: the share of the cut's content budget the kept lines may take.

    Raises :class:`ConfigError` naming the pattern (and ``key``, ``file``) when
    one is invalid, or is a regular expression and the ``re2`` extra is missing.
    """
    share = check_share(share, key=key, file=file)
    if patterns is None:
        return KeepLines(_DEFAULT_MATCHERS, share)
    if isinstance(patterns, (str, bytes)) or not isinstance(patterns, Sequence):
        raise ConfigError(f"keep_lines must be a list of patterns, got {patterns!r:.60}",
                          key=key, file=file)
    matchers: list[LineMatcher] = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ConfigError(f"keep_lines must be a list of strings, got {pattern!r:.60}",
                              key=key, file=file)
        try:
            matchers.append(_Pattern(compile_pattern(pattern)))
        except ValueError as error:
            raise ConfigError(str(error), key=key, file=file) from None
    return KeepLines(tuple(matchers), share)


@functools.lru_cache(maxsize=64)
def compiled_keep_lines(patterns: tuple[str, ...] | None, share: float) -> KeepLines:
    """:func:`keep_lines` for values already checked, compiled once for every policy."""
    return keep_lines(patterns, share)
