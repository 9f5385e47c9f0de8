"""The dict paths need no SDK: run them in an interpreter where the SDKs cannot import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    for name in ("openai", "anthropic", "langchain_core", "mcp", "httpx", "pydantic"):
        sys.modules[name] = None  # any import of it now raises ImportError
    from toolcap import Config, Policy
    from toolcap.adapters import anthropic, openai
    from toolcap.adapters._decorator import bounded

    policy = Policy(Config(), sink=None, notices=False)
    big = "x" * 100_000
    chat = [{"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "Read"}}]},
            {"role": "tool", "tool_call_id": "a", "content": big}]
    assert len(openai.bound_chat_messages(chat, policy)[1]["content"]) <= 32768
    assert len(openai.guard_chat_messages(chat, policy)[1]["content"]) <= 32768
    items = [{"type": "function_call", "call_id": "a", "name": "Read"},
             {"type": "function_call_output", "call_id": "a", "output": big}]
    assert len(openai.bound_responses_input(items, policy)[1]["output"]) <= 32768
    msgs = [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "R"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                          "content": big}]}]
    assert len(anthropic.bound_messages(msgs, policy)[1]["content"][0]["content"]) <= 32768
    assert len(bounded(tool="Read", policy=policy)(lambda: big)()) <= 32768
    print("ok")
""")


def test_dict_paths_work_with_no_sdk_importable() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
