"""Cuts driven by data: ``tests/data/cuts/NAME.in`` is cut as ``NAME.toml`` says into ``NAME.out``.

``keep_lines = "default"`` in a ``.toml`` keeps the built-in set of lines, as a
tool's policy does. To add a case, write the ``.in`` and ``.toml`` files, run this module with
``TOOLCAP_WRITE_CASES=1`` to produce the ``.out`` file, and read it before committing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import assert_golden
from toolcap import cap_text, keep_lines

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES = Path(__file__).parent.parent / "data" / "cuts"
NAMES = sorted(path.stem for path in CASES.glob("*.in"))


@pytest.mark.parametrize("name", NAMES)
def test_cut_case_matches_expected_output(name: str) -> None:
    raw = (CASES / f"{name}.in").read_bytes()
    options = tomllib.loads((CASES / f"{name}.toml").read_text())
    as_bytes = options.pop("input", "auto") == "bytes"
    if "keep_lines" in options:  # "default": the built-in set, as a tool has it
        patterns = options.pop("keep_lines")
        options["keep_lines"] = keep_lines(None if patterns == "default" else patterns)
    try:
        text: str | bytes = raw if as_bytes else raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw
    result = cap_text(text, options.pop("limit"), **options)
    expected_path = CASES / f"{name}.out"
    assert_golden(expected_path, result.text.encode("utf-8"))
    assert result.kept_bytes == len(expected_path.read_bytes())


def test_every_case_has_its_three_files() -> None:
    assert NAMES, "no cut cases found"
    for name in NAMES:
        assert (CASES / f"{name}.toml").is_file(), name
        assert (CASES / f"{name}.out").is_file(), name


def test_a_reference_too_long_for_the_limit_falls_back_to_a_short_marker() -> None:
    result = cap_text(b"\xff" * 5000, "1KB", reference="r" * 2000)
    assert result.truncated
    assert result.kept_bytes <= 1024
    assert result.text == "[toolcap: truncated]"
