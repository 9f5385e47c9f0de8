"""An Anthropic Messages tool loop with toolcap: one line bounds every tool result.

Runs offline: a stand-in for the API on 127.0.0.1 (``offline_api``, at the bottom)
answers with two tool calls, then a final answer. Set ANTHROPIC_API_KEY and pass
``--live`` to talk to the real API instead.

    python examples/anthropic_loop.py
"""

from __future__ import annotations

import base64
import json
import sys

import anthropic
from _offline import serve

from toolcap.adapters.anthropic import bound_messages, guard_messages

TOOLS = [
    {"name": "read_log", "description": "Read a log file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "screenshot", "description": "Capture the screen.",
     "input_schema": {"type": "object", "properties": {}}},
]


def run_tool(name: str, arguments: dict) -> str | list:
    if name == "read_log":
        return "".join(f"{i:07d} INFO request served in 3 ms\n" for i in range(150_000))
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(600_000)).decode()  # a big image
    return [{"type": "text", "text": "the screen:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]


def run(client: anthropic.Anthropic, model: str) -> str:
    messages: list = [{"role": "user", "content": "What is on screen, and how busy is app.log?"}]
    while True:
        reply = client.messages.create(model=model, max_tokens=1024, tools=TOOLS,
                                       messages=guard_messages(messages))  # send boundary
        messages.append({"role": "assistant", "content": reply.content})
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use.id, "content": run_tool(use.name, use.input)}
            for use in uses]})
        messages = bound_messages(messages)  # <- toolcap: record and send this
        for result in messages[-1]["content"]:
            print("sent:", json.dumps(result["content"])[:160], "…")


def offline_api(request: dict) -> dict:
    """A stand-in for the API: two tool calls first, then an answer."""
    last = request["messages"][-1]
    if isinstance(last["content"], list):
        size = len(json.dumps(last))
        content = [{"type": "text", "text": f"I got {size:,} bytes of results."}]
    else:
        content = [{"type": "tool_use", "id": "tu_1", "name": "read_log", "input": {"path": "a"}},
                   {"type": "tool_use", "id": "tu_2", "name": "screenshot", "input": {}}]
    return {"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": content,
            "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}


if __name__ == "__main__":
    if "--live" in sys.argv:
        print(run(anthropic.Anthropic(), "claude-sonnet-4-5"))
    else:
        client = anthropic.Anthropic(api_key="offline", base_url=serve(offline_api))
        print(run(client, "offline"))
