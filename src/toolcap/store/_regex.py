"""Patterns that run in time linear in the text searched, whatever the pattern.

A pattern comes from a model or a user and is run on text we did not write, so a
backtracking engine (Python's ``re``) is never used on it: ``(a+)+$`` on 35
bytes would hold the interpreter for ever, and even ``.*x`` is quadratic in the
line. With the ``re2`` extra (google-re2, part of the ``mcp`` extra too) every
RE2 pattern is accepted and constructs RE2 refuses (backreferences, lookaround)
are a ``ValueError`` that says so. Without it only plain text is searched (a
pattern with no regular-expression syntax, or ``fixed``); anything else is a
``ValueError`` naming the extra to install.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["MAX_PATTERN_CHARS", "Matcher", "compile_pattern", "have_re2"]

MAX_PATTERN_CHARS = 4096  # a pattern is a query, not a document
_RE2_MEMORY = 64 << 20  # RE2's budget for its automata; past it the pattern is refused
_SYNTAX = set(".^$*+?{}[]|()")
_INSTALL = "pip install 'toolcap[re2]'"
_UNSETS_FLAG = re.compile(r"\(\?[a-zA-Z]*-")  # (?-m) and kin; linear on any input


def _load_re2() -> Any:
    try:
        return importlib.import_module("re2")
    except ImportError:
        return None


_re2: Any = _load_re2()


def have_re2() -> bool:
    """Whether regular expressions are available (the google-re2 binding is installed)."""
    return _re2 is not None


class Matcher(Protocol):
    """Finds a pattern in bytes; each call costs time linear in ``endpos - pos``."""

    def finditer(self, data: bytes, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each non-overlapping match in ``data[pos:endpos]``.

        Bytes outside the range are context only: ``^`` does not match at
        ``pos`` when a byte precedes it.
        """
        ...

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        """A position at or before the first match in any line of ``data[pos:endpos]``.

        None when no line has a match. Lets a search skip lines that
        cannot match in one call over many of them.
        """
        ...


class _Re2Matcher:
    def __init__(self, compiled: Any, lines: Any) -> None:
        self._compiled = compiled
        self._lines = lines  # the pattern with ^ and $ at every line's ends; None: no skipping

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        if self._lines is None:
            return pos
        found = self._lines.search(data, pos, endpos)
        return None if found is None else int(found.start())

    def finditer(self, data: bytes, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
        while pos <= endpos:
            found = self._compiled.search(data, pos, endpos)
            if found is None:
                return
            start, end = found.span()
            yield start, end
            pos = end if end > start else end + 1  # an empty match moves on by one


class _LiteralMatcher:
    """Plain text by ``bytes.find`` (linear); ignoring case folds ASCII letters only."""

    def __init__(self, needle: bytes, ignore_case: bool) -> None:
        self._needle = needle.lower() if ignore_case else needle
        self._fold = ignore_case

    def first(self, data: bytes, pos: int, endpos: int) -> int | None:
        if self._fold:
            return pos  # folding the whole block for each call would cost more than it saves
        found = data.find(self._needle, pos, endpos)
        return None if found < 0 else found

    def finditer(self, data: bytes, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
        haystack = data.lower() if self._fold else data  # same length: offsets hold
        size = len(self._needle)
        while pos <= endpos:
            start = haystack.find(self._needle, pos, endpos)
            if start < 0:
                return
            yield start, start + size
            pos = start + size if size else start + 1


def _plain_text(pattern: str) -> str | None:
    """The text ``pattern`` matches if it uses no regular-expression syntax, else None.

    A backslash before punctuation stands for that character (``a\\.b`` is
    ``a.b``); before a letter or digit it is syntax (``\\d``, ``\\1``).
    """
    out: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            if char.isalnum() or char == "_":
                return None
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _SYNTAX:
            return None
        else:
            out.append(char)
    return None if escaped else "".join(out)


def compile_pattern(pattern: str, *, ignore_case: bool = False, fixed: bool = False) -> Matcher:
    """A linear-time matcher for ``pattern`` (plain text when ``fixed``).

    Raises ``ValueError`` with a one-line reason for a pattern that is invalid,
    too large, uses what RE2 cannot run in linear time, or needs the ``re2``
    extra that is not installed.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern is {len(pattern)} characters; at most "
                         f"{MAX_PATTERN_CHARS} are accepted")
    if _re2 is not None:
        return _compile_re2(pattern, ignore_case=ignore_case, fixed=fixed)
    text = pattern if fixed else _plain_text(pattern)
    if text is None:
        raise ValueError(f"pattern {pattern!r} is a regular expression, and searching by "
                         f"regular expression needs RE2 ({_INSTALL}); plain text is searched "
                         f"without it (escape the syntax, or search fixed strings)")
    return _LiteralMatcher(text.encode("utf-8", "surrogatepass"), ignore_case)


def _compile_re2(pattern: str, *, ignore_case: bool, fixed: bool) -> Matcher:
    options = _re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern on our stderr
    options.max_mem = _RE2_MEMORY
    options.case_sensitive = not ignore_case
    options.literal = fixed
    try:
        compiled = _re2.compile(pattern, options)
        if fixed:
            lines = compiled
        elif "\\A" in pattern or "\\z" in pattern or _UNSETS_FLAG.search(pattern):
            lines = None  # anchors to the whole text: only a line alone tells
        else:
            lines = _re2.compile("(?m)" + pattern, options)
        return _Re2Matcher(compiled, lines)
    except _re2.error as exc:
        said = exc.args[0] if exc.args else b"refused"
        reason = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
        raise ValueError(_refusal(pattern, reason)) from None
    except (TypeError, UnicodeError) as exc:
        raise ValueError(f"invalid pattern {pattern!r}: {exc}") from None


def _refusal(pattern: str, reason: str) -> str:
    try:
        re.compile(pattern)  # compiling runs nothing on the text: safe on any pattern
    except (re.error, RecursionError, OverflowError):
        return f"invalid pattern {pattern!r}: {reason}"
    return (f"pattern {pattern!r} is not supported: {reason} (searches run in linear time "
            f"with RE2, which has no backreferences or lookaround)")
