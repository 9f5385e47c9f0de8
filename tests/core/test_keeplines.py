"""keep_lines: the matching lines of a cut's elided part are delivered, numbered, within bounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcap import _keep, cap_text
from toolcap._keep import default_scans, keep_lines
from toolcap._literals import LiteralScan, have_hyperscan
from toolcap.core._cut import cut
from toolcap.core._keeplines import (
    DEFAULT_KEEP_LINES,
    DEFAULT_NEEDLES,
    MAX_LINE_BYTES,
    KeepLines,
    find_lines,
    line_matches,
)

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CASES = Path(__file__).parent.parent / "data" / "cuts"
KEPT = re.compile(r"^(\d+)\| (.*)$")
SUMMARY = re.compile(r"^\[toolcap: (\d+) of (\d+) lines of the cut part that match keep_lines,"
                     r" each after its line number:\]$")


@pytest.mark.parametrize("line", [
    "Traceback (most recent call last):",
    "ValueError: invalid literal for int() with base 10: 'x'",
    "AssertionError",
    "pkg.errors.QuotaError",
    "src/main.c:12:5: error: expected ';' before '}' token",
    "error[E0308]: mismatched types",
    "src/app.ts(3,5): error TS2304: Cannot find name 'x'.",
    "2026-11-29 12:00:01 ERROR payment declined",
    "FAILED tests/test_a.py::test_b - assert 1 == 2",
    "--- FAIL: TestParse (0.00s)",
    "FAIL\texample.com/shop/cart\t0.012s",
    "panic: runtime error: index out of range [5] with length 3",
    "fatal: not a git repository (or any of the parent directories): .git",
    "java.lang.IllegalStateException: closed",
    "==== 2 failed, 638 passed in 12.31s ====",
    "test result: ok. 12 passed; 0 failed; 0 ignored",
    "===== 1 error in 0.20s =====",
    "exit status 2",
    "Process finished with exit code 137",
    "npm ERR! code ELIFECYCLE",
    "subprocess exited with code -1",
])
def test_the_built_in_set_catches_what_developers_look_for_first(line: str) -> None:
    assert line_matches(DEFAULT_KEEP_LINES.matchers, line.encode())
    assert line_matches(keep_lines().matchers, line.encode())  # with RE2's one scan too


@pytest.mark.parametrize("line", [
    "2026-11-29T12:00:00Z worker-001 INFO request handled in 12 ms",
    "exit status 0",
    "Process finished with exit code 0",
    "errors are reported below",
    "ErrorHandler registered for /api",
    "all tests passed",
    "",
])
def test_the_built_in_set_leaves_ordinary_lines(line: str) -> None:
    assert not line_matches(DEFAULT_KEEP_LINES.matchers, line.encode())
    assert not line_matches(keep_lines().matchers, line.encode())


def test_a_line_longer_than_the_examined_bound_never_matches() -> None:
    short = b"error: " + b"x" * (MAX_LINE_BYTES - 7)
    assert line_matches(DEFAULT_KEEP_LINES.matchers, short)
    assert not line_matches(DEFAULT_KEEP_LINES.matchers, short + b"x")
    data = short + b"x\n" + short + b"\n"
    assert list(find_lines(DEFAULT_NEEDLES, data, 0, len(data))) == [
        (MAX_LINE_BYTES + 2, len(data) - 1)]


def test_a_line_that_is_not_valid_utf8_is_never_kept() -> None:
    assert not line_matches(DEFAULT_KEEP_LINES.matchers, b"error: \xff")


def test_a_catastrophic_pattern_runs_in_linear_time_on_hostile_lines() -> None:
    # (a+)+$ backtracks for ever in Python's re on "aaaa…b"; RE2 does not.
    keep = keep_lines([r"(a+)+$"])
    text = ("a" * 3000 + "b\n") * 400 + "tail\n" * 2000
    result = cap_text(text, "4KB", keep_lines=keep)
    assert result.kept_bytes <= 4096


def _naive(keep: KeepLines, data: bytes, start: int, end: int) -> list[tuple[int, int]]:
    found, at = [], start
    while at < end:
        line_end = data.index(b"\n", at)
        if line_matches(keep.matchers, data[at:line_end]):
            found.append((at, line_end))
        at = line_end + 1
    return found


words = st.sampled_from(["error:", "Error", "ERROR", "ok", " ", "x", "3 failed", "\n", "é",
                         "exit code 1", "exit code 0", "Traceback (most recent call last)",
                         "FAIL\t", "panic:", "err", "\n\n", "Exception"])


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    data = "".join(draw(st.lists(words, max_size=200))).encode()
    return data if data.endswith(b"\n") else data + b"\n"


SCANS = {"default": DEFAULT_KEEP_LINES, "installed": keep_lines(),
         "patterns": keep_lines([r"^\d+ failed", "ok$", r"(?i)exc"]),
         **{f"default-{engine}": KeepLines(matchers, 0.25)
            for engine, matchers in default_scans().items()}}


def test_the_built_in_set_has_a_scan_for_each_installed_engine() -> None:
    # The test extra installs both, so that each scan is checked against the needles.
    assert set(default_scans()) == {"hyperscan", "re2"}


def test_the_built_in_set_loads_hyperscan_only_once_a_text_is_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upgrading = _keep._Upgrading(_keep._re2_scan(), [needle.text for needle in DEFAULT_NEEDLES])
    monkeypatch.setattr(_keep, "FAST_AFTER", 4096)
    keep = KeepLines((_keep._AnyNeedle(upgrading, DEFAULT_NEEDLES),), 0.25)
    data = (b"ok\n" * 500 + b"error: one\n") * 4
    expected = _naive(keep, data, 0, len(data))
    assert list(find_lines(keep.matchers, data, 0, 1511)) == expected[:1]
    assert not isinstance(upgrading._scan, LiteralScan)  # 1.5 KB scanned: still RE2
    assert list(find_lines(keep.matchers, data, 0, len(data))) == expected
    assert isinstance(upgrading._scan, LiteralScan) == have_hyperscan()


@PROPERTY
@given(logs(), st.sampled_from(sorted(SCANS)))
def test_the_scan_finds_exactly_the_lines_that_match_alone(data: bytes, which: str) -> None:
    keep = SCANS[which]
    assert list(find_lines(keep.matchers, data, 0, len(data))) == _naive(keep, data, 0, len(data))


@st.composite
def long_logs(draw: st.DrawFn) -> tuple[str, set[int]]:
    """A log of ordinary lines with matching ones at random places: (text, their numbers)."""
    count = draw(st.integers(50, 1500))
    width = draw(st.integers(10, 120))
    errors = draw(st.lists(st.integers(1, count), max_size=30))
    specials = draw(st.lists(st.sampled_from(
        ["error: bad thing é", "FAILED x", "panic: 漢字", "3 failed, 1 passed", "x" * 200]),
        min_size=1, max_size=5))
    lines = [f"{n:05d} " + "ok " * (width // 3) for n in range(1, count + 1)]
    matching = set()
    for i, at in enumerate(errors):
        special = specials[i % len(specials)]
        lines[at - 1] = f"{at:05d} {special}"
        if special.startswith("x"):
            matching.discard(at)
        else:
            matching.add(at)
    ending = draw(st.sampled_from(["\n", "", "\r\n"]))
    return "\n".join(lines) + ending, matching


def assert_kept_lines_are_input_lines(result_text: str, text: str) -> list[int]:
    """Every kept line is the input's line of that number; returns the numbers."""
    input_lines = text.split("\n")
    out = result_text.split("\n")
    numbers: list[int] = []
    for index, line in enumerate(out):
        summary = SUMMARY.match(line)
        if summary:
            kept = int(summary.group(1))
            assert kept <= int(summary.group(2))
            for kept_line in out[index + 1 : index + 1 + kept]:
                match = KEPT.match(kept_line)
                assert match is not None, kept_line
                number = int(match.group(1))
                assert input_lines[number - 1] == match.group(2)
                numbers.append(number)
    assert numbers == sorted(numbers)
    return numbers


@PROPERTY
@given(long_logs(), st.integers(1024, 8192), st.sampled_from(["head_tail", "tail"]),
       st.floats(0.05, 1.0))
def test_kept_lines_are_input_lines_within_the_limit(
    log: tuple[str, set[int]], limit: int, strategy: str, share: float
) -> None:
    text, _ = log
    keep = keep_lines(share=share)
    result = cut(text, limit, strategy=strategy, keep_lines=keep)  # type: ignore[arg-type]
    assert result.kept_bytes == len(result.text.encode("utf-8")) <= limit
    assert_kept_lines_are_input_lines(result.text, text)


@PROPERTY
@given(long_logs(), st.integers(1024, 8192))
def test_an_error_line_from_the_middle_is_delivered_when_it_fits(
    log: tuple[str, set[int]], limit: int
) -> None:
    text, errors = log
    result = cut(text, limit, keep_lines=DEFAULT_KEEP_LINES)
    numbers = assert_kept_lines_are_input_lines(result.text, text)
    if not numbers or not result.truncated:
        return
    # The kept lines are the first matching lines of the elided part, in order:
    # none between them is left out.
    assert set(numbers) <= errors
    assert numbers == sorted(n for n in errors if numbers[0] <= n <= numbers[-1])


@PROPERTY
@given(long_logs(), st.integers(1024, 8192), st.sampled_from(["head_tail", "tail", "head"]))
def test_keep_lines_off_gives_the_cut_of_before(
    log: tuple[str, set[int]], limit: int, strategy: str
) -> None:
    text, _ = log
    off = cut(text, limit, strategy=strategy)  # type: ignore[arg-type]
    assert cut(text, limit, strategy=strategy,  # type: ignore[arg-type]
               keep_lines=keep_lines([])).text == off.text
    assert cap_text(text, limit, strategy=strategy,  # type: ignore[arg-type]
                    keep_lines=None).text == off.text
    if strategy == "head":  # a head cut has no elided middle to keep lines from
        assert cap_text(text, limit, strategy="head").text == off.text


def test_without_matching_lines_the_default_changes_nothing() -> None:
    text = "".join(f"line {n} all good\n" for n in range(5000))
    assert cap_text(text, "4KB", keep_lines=keep_lines()).text == cap_text(text, "4KB").text


@pytest.mark.parametrize(("name", "expected"), [
    ("keep_lines_pytest_run", ["FAILED [ 47%]", "FAILED [ 55%]"]),
    ("keep_lines_cargo_build", ["267| error[E0308]: mismatched types"]),
    ("keep_lines_python_traceback", ["252| Traceback (most recent call last):",
                                     "257| ValueError: invalid literal"]),
    ("keep_lines_go_panic", ["61| panic: runtime error: index out of range"]),
])
def test_the_error_lines_of_the_logs_are_delivered(name: str, expected: list[str]) -> None:
    text = (CASES / f"{name}.in").read_text()
    result = cap_text(text, "4KB", keep_lines=keep_lines())
    for needle in expected:
        assert needle in result.text
        assert needle not in cap_text(text, "4KB").text
    assert_kept_lines_are_input_lines(result.text, text)


def test_the_marker_counts_the_kept_lines_in_what_was_kept() -> None:
    lines = [f"{n:05d} all good here" for n in range(1, 2001)]
    lines[999] = "01000 error: the one"
    text = "\n".join(lines) + "\n"
    off, on = cap_text(text, "4KB"), cap_text(text, "4KB", keep_lines=keep_lines())
    assert "1000| 01000 error: the one" in on.text
    assert "[toolcap: 1 of 1 lines of the cut part" in on.text
    assert on.kept_bytes <= 4096 and on.kept_bytes == len(on.text.encode())
    assert off.kept_bytes != on.kept_bytes
