"""One spelling of "leave it to the configuration": ``"default"`` (core/_default.py)."""

from __future__ import annotations

import ast
import base64
from pathlib import Path

import toolcap
from toolcap import Config, Policy
from toolcap.adapters.mcp import bound_call_tool_result_dict
from toolcap.core._default import DEFAULT
from toolcap.shell._spill import open_stream

SOURCE = Path(toolcap.__file__).parent


def test_no_parameter_says_use_the_default_any_other_way() -> None:
    # `...` and ad-hoc words ("policy") were other spellings of the same thing.
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                for default in [*arguments.defaults, *arguments.kw_defaults]:
                    assert not (isinstance(default, ast.Constant) and default.value is ...), (
                        f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}: a default of "
                        "`...`; write DEFAULT (core/_default.py)")
            if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal":
                words = {c.value for c in ast.walk(node.slice) if isinstance(c, ast.Constant)}
                assert not words & {"policy", "config", "auto", "inherit"}, (
                    f"{path.relative_to(SOURCE)}:{node.lineno}: {ast.unparse(node)}; "
                    "write Default (core/_default.py)")


def test_policy_notices_default_to_the_configuration() -> None:
    quiet = Config(notices=False)
    assert Policy(quiet, sink=None).notices is False
    assert Policy(quiet, sink=None, notices=DEFAULT).notices is False
    assert Policy(quiet, sink=None, notices=True).notices is True
    assert Policy(Config(), sink=None).notices is True


def test_a_stream_takes_the_tool_threshold_by_default_and_none_means_no_limit() -> None:
    policy = Policy(Config().with_tool("t", size_threshold="2KB"), sink=None, notices=False)
    assert open_stream(policy, "t", spill=False).cutter.limit == 2048
    assert open_stream(policy, "t", threshold=DEFAULT, spill=False).cutter.limit == 2048
    unlimited = open_stream(policy, "t", threshold=None, ceiling=None, spill=False)
    assert unlimited.cutter.limit is None


def test_mcp_media_limit_is_the_configured_one_by_default_and_none_means_no_limit() -> None:
    image = {"type": "image", "mimeType": "image/png",
             "data": base64.b64encode(b"\x89PNG" * 40_000).decode()}
    policy = Policy(Config(media_threshold=1024), sink=None, notices=False)
    result = {"content": [image]}
    by_default = bound_call_tool_result_dict(result, policy, tool="t")
    assert by_default.changed and by_default.result["content"][0]["type"] == "text"
    assert bound_call_tool_result_dict(result, policy, tool="t", media_threshold=DEFAULT).changed
    assert not bound_call_tool_result_dict(result, policy, tool="t", media_threshold=None).changed
