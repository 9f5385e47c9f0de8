"""An OpenAI Chat Completions tool loop with toolcap: one line bounds every tool result.

Runs offline: a stand-in for the API on 127.0.0.1 (``offline_api``, at the bottom)
answers with one tool call, then a final answer. Set OPENAI_API_KEY and pass
``--live`` to talk to the real API instead.

    python examples/openai_loop.py
"""

from __future__ import annotations

import json
import sys

import openai
from _offline import serve

from toolcap.adapters.openai import bound_chat_messages, guard_chat_messages

TOOLS = [{"type": "function", "function": {
    "name": "read_log", "description": "Read a log file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}}]


def read_log(path: str) -> str:
    return "".join(f"{i:07d} INFO request served in 3 ms\n" for i in range(150_000))  # ~5 MB


def run(client: openai.OpenAI, model: str) -> str:
    messages: list = [{"role": "user", "content": "How many requests are in app.log?"}]
    while True:
        reply = client.chat.completions.create(
            model=model, messages=guard_chat_messages(messages), tools=TOOLS)  # send boundary
        message = reply.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            output = read_log(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        messages = bound_chat_messages(messages)  # <- toolcap: record and send this
        print(f"tool result: {len(output):,} bytes -> {len(messages[-1]['content']):,} sent")


def offline_api(request: dict) -> dict:
    """A stand-in for the API: a tool call first, then an answer."""
    sent = request["messages"]
    if sent[-1]["role"] == "tool":
        message = {"role": "assistant", "content": f"I saw {len(sent[-1]['content']):,} bytes."}
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "read_log", "arguments": '{"path": "app.log"}'}}]}
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


if __name__ == "__main__":
    if "--live" in sys.argv:
        print(run(openai.OpenAI(), "gpt-4.1-mini"))
    else:
        client = openai.OpenAI(api_key="offline", base_url=serve(offline_api) + "/v1")
        print(run(client, "offline"))
