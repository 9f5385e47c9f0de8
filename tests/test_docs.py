"""The README and the pages of docs/ hold together: links resolve, every option is documented."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcap.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _outside_fences(text: str) -> str:
    kept, in_fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            kept.append(line)
    return "\n".join(kept)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings."""
    found = set()
    for line in _outside_fences(path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def links(path: Path) -> Iterator[str]:
    for match in _LINK.finditer(_outside_fences(path.read_text(encoding="utf-8"))):
        target = match["target"]
        if not re.match(r"[a-z]+:", target):
            yield target


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        if not linked.exists() or (anchor and linked.suffix == ".md"
                                   and anchor not in anchors(linked)):
            broken.append(target)
    assert broken == []


def test_the_readme_links_every_page_of_docs() -> None:
    readme = set(links(ROOT / "README.md"))
    assert {f"docs/{page.name}" for page in PAGES[1:]} <= readme


def _options(parser: argparse.ArgumentParser, command: str) -> Iterator[tuple[str, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{command} {name}".strip())
        else:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    yield command, option


def test_the_cli_page_names_every_command_and_option() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    missing = [f"{command} {option}" for command, option in _options(parser, "")
               if option not in page]
    commands = [name for action in parser._actions
                if isinstance(action, argparse._SubParsersAction) for name in action.choices]
    missing += [name for name in commands if f"## toolcap {name}" not in page]
    assert missing == []
