"""Realistic documents cut by structure: ``tests/data/jsoncut/NAME.json`` → ``NAME.expected``.

To add a case, write the ``.json`` (or extend ``make_inputs.py``) and ``.toml`` files,
run this module with ``TOOLCAP_WRITE_CASES=1`` to produce the ``.expected`` file, and
read it before committing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from toolcap.core._jsoncut import cut_json
from toolcap.core._jsondoc import resolve_pointer

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES = Path(__file__).parent.parent / "data" / "jsoncut"
NAMES = sorted(path.stem for path in CASES.glob("*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_json_case_matches_expected_output(name: str) -> None:
    text = (CASES / f"{name}.json").read_text(encoding="utf-8")
    options = tomllib.loads((CASES / f"{name}.toml").read_text())
    limit = options.pop("limit")
    result = cut_json(text, limit, **options)
    assert result is not None and result.truncated
    expected_path = CASES / f"{name}.expected"
    if os.environ.get("TOOLCAP_WRITE_CASES"):
        expected_path.write_bytes(result.text.encode("utf-8"))
    assert result.text.encode("utf-8") == expected_path.read_bytes()
    assert len(result.text.encode("utf-8")) <= limit
    json.loads(result.text)


def test_every_json_case_has_its_three_files() -> None:
    assert len(NAMES) >= 5, "JSON cut cases missing"
    for name in NAMES:
        assert (CASES / f"{name}.toml").is_file(), name
        assert (CASES / f"{name}.expected").is_file(), name


def test_the_issue_list_keeps_first_and_last_records_and_names_the_rest() -> None:
    original = json.loads((CASES / "rest_issues_compact.json").read_text())
    delivered = json.loads((CASES / "rest_issues_compact.expected").read_text())
    assert delivered["total_count"] == original["total_count"]
    items = delivered["items"]
    (note,) = [item for item in items if isinstance(item, str)]
    assert note.startswith("[toolcap: ") and "items elided (/items/" in note
    assert note.endswith("; full output: toolcap:0123456789abcdef0123456789abcdef]")
    assert items[0] == original["items"][0] and items[-1] == original["items"][-1]
    first = note.split("(")[1].split(" … ")[0]
    assert resolve_pointer(original, first) == original["items"][items.index(note)]


def test_the_giant_string_is_cut_inside_and_its_siblings_stay_whole() -> None:
    original = json.loads((CASES / "search_giant_string.json").read_text())
    delivered = json.loads((CASES / "search_giant_string.expected").read_text())
    assert delivered["results"][0] == original["results"][0]
    assert delivered["results"][2] == original["results"][2]
    content = delivered["results"][1]["content"]
    assert "[toolcap: output truncated" in content
    assert original["results"][1]["content"].startswith(content.split("\n[toolcap")[0])


def test_the_package_lock_keeps_its_first_packages_and_one_toolcap_member() -> None:
    original = json.loads((CASES / "package_lock.json").read_text())
    delivered = json.loads((CASES / "package_lock.expected").read_text())
    kept = list(delivered["packages"])
    assert kept[-1] == "toolcap"
    assert kept[:-1] == list(original["packages"])[: len(kept) - 1]
    assert "keys elided (/packages/node_modules~1pkg-" in delivered["packages"]["toolcap"]
