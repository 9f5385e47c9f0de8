"""Whatever caps cut a response, the model sees one marker with the true sizes.

The README's git example sets ``git_diff_unstaged = "64KB"``, equal to the
default wire budget: the threshold cuts a 4.3 MB diff, then its JSON escapes
put it over the wire budget. The wire cut is made again from the original, so
one marker says what is really missing, names the artifact once, and keeps
whole lines as the first cut did.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import reference_of
from toolcap import Config, Policy, ToolResponse, human_size
from toolcap.adapters.mcp import bound_call_tool_result_dict
from toolcap.core._json import json_size
from toolcap.store import MemoryStore

KB = 1024
MARKER = re.compile(r"\n?\[toolcap: output truncated, kept (.+?) of (.+?)(?:; full output: "
                    r"(toolcap:[0-9a-f]+))?\. Narrow the query[^\]]*\]\n?")


def git_diff(size: int) -> str:
    """A unified diff of about ``size`` bytes: quotes, tabs and backslashes to escape."""
    lines, total, n = [], 0, 0
    while total < size:
        line = (f'+\tprint("line {n}: a \\"quoted\\" value\\tand a tab")\n' if n % 3 else
                f"@@ -{n},7 +{n},8 @@ def handler(request):\n")
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)


def git_policy(store: MemoryStore) -> Policy:
    config = Config.from_mapping({"tools": {"git_diff_unstaged": "64KB"}})
    return Policy(config, sink=store, notices=False)


def one_marker(text: str, original: str) -> re.Match[str]:
    """The one marker of ``text``; its head and tail are the original's, its sizes true."""
    markers = list(MARKER.finditer(text))
    assert len(markers) == 1, [m.group() for m in markers]
    (marker,) = markers
    head, tail = text[: marker.start()], text[marker.end():]
    assert original.startswith(head) and original.endswith(tail)
    assert marker[2] == human_size(len(original.encode()))
    assert marker[1] == human_size(len((head + tail).encode()))
    return marker


DIFF = git_diff(4_600_000)


def test_the_readme_git_example_through_finalize_has_one_true_marker() -> None:
    store = MemoryStore()
    (result,) = git_policy(store).finalize([ToolResponse("git_diff_unstaged", DIFF)])
    assert result.text is not None and result.delivered_bytes <= 64 * KB
    marker = one_marker(result.text, DIFF)
    assert marker[2] == "4.3 MB"
    assert marker[3] == reference_of(DIFF.encode())


def test_the_readme_git_example_through_the_mcp_adapter_has_one_true_marker() -> None:
    store = MemoryStore()
    result = {"content": [{"type": "text", "text": DIFF}]}
    bounded = bound_call_tool_result_dict(result, git_policy(store), tool="git_diff_unstaged",
                                          wire_budget=64 * KB)
    (block,) = bounded.result["content"]
    assert json_size(bounded.result["content"]) <= 64 * KB
    assert len(block["text"].encode()) <= 64 * KB
    marker = one_marker(block["text"], DIFF)
    assert marker[3] == reference_of(DIFF.encode())
    assert bounded.artifacts == (reference_of(DIFF.encode()),)
    # The cut keeps whole lines, as the threshold's cut did.
    head = block["text"][: marker.start()]
    tail = block["text"][marker.end():]
    assert DIFF[len(head)] == "\n" and DIFF[len(DIFF) - len(tail) - 1] == "\n"


def blocks(texts: list[str]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text} for text in texts]}


lines = st.lists(st.sampled_from(['plain words', 'a "quoted" one', "tab\there", "back\\slash",
                                  "ctrl \x01\x02", "漢字", "emoji \U0001f600"]),
                 min_size=1, max_size=40).map(lambda parts: "\n".join(parts) + "\n")


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(unit=lines, repeat=st.integers(1, 3000), threshold=st.none() | st.integers(1, 64),
       ceiling=st.none() | st.integers(1, 64), wire=st.none() | st.integers(2, 64))
def test_any_chain_of_caps_leaves_one_marker_with_the_true_sizes(
    unit: str, repeat: int, threshold: int | None, ceiling: int | None, wire: int | None
) -> None:
    original = unit * repeat
    config = Config.from_mapping({
        "batch_ceiling": f"{ceiling}KB" if ceiling else "unlimited",
        "tools": {"*": {"size_threshold": f"{threshold}KB" if threshold else "unlimited",
                        "format": "text"}}})
    bounded = bound_call_tool_result_dict(
        blocks([original]), Policy(config, sink=MemoryStore(), notices=False), tool="t",
        wire_budget=wire * KB if wire else None)
    (block,) = bounded.result["content"]
    text = block["text"]
    if not bounded.changed:
        assert text is original
        return
    if "[toolcap: truncated]" in text or not MARKER.search(text):
        return  # a share too small for the marker: the short one, no sizes to check
    marker = one_marker(text, original)
    assert marker[3] == reference_of(original.encode())
    limits = [limit * KB for limit in (threshold, ceiling) if limit]
    assert len(text.encode()) <= min(limits, default=len(text.encode()))
    if wire:
        assert json_size(bounded.result["content"]) <= wire * KB
