"""The LangChain adapter with the real ``langchain-core`` (and LangGraph where installed)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from _langchain import Recording
from toolcap import Config, Policy
from toolcap.adapters.langchain import bound_tool, bound_tool_messages, guard_tool_messages
from toolcap.store import MemoryStore

KB = 1024
FIVE_MB = "entry ✓ 0123456789 abcdefghij\n" * (5 * 1024 * 1024 // 32)


class BigLog(BaseTool):
    """A tool that returns far more than a model should see."""

    name: str = "big_log"
    description: str = "Read the whole log."

    def _run(self, path: str) -> str:
        return FIVE_MB


def _script() -> Any:
    return iter([
        AIMessage("", tool_calls=[{"name": "big_log", "args": {"path": "x.log"}, "id": "call_1"}]),
        AIMessage("done"),
    ])


def test_wrapped_tool_keeps_the_name_and_schema_the_model_sees() -> None:
    inner = BigLog()
    wrapped = bound_tool(inner)
    assert convert_to_openai_tool(wrapped) == convert_to_openai_tool(inner)


def test_wrapped_tool_bounds_the_tool_message_of_a_tool_call(
    policy: Policy, store: MemoryStore
) -> None:
    model = Recording(messages=_script())
    wrapped = bound_tool(BigLog(), policy=policy)
    reply = model.invoke([HumanMessage("read x.log")])
    message = wrapped.invoke(reply.tool_calls[0])  # LangChain's own tool-call path
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "call_1" and message.name == "big_log"
    assert len(message.content.encode("utf-8")) <= 32 * KB
    reference = message.content.split("full output: ")[1].split(".")[0]
    assert store.read_bytes(reference) == FIVE_MB.encode("utf-8")
    assert len(wrapped.invoke({"path": "x.log"}).encode("utf-8")) <= 32 * KB


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_langgraph_agent_gets_bounded_results_without_other_changes(policy: Policy) -> None:
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    model = Recording(messages=_script())
    agent = prebuilt.create_react_agent(model, [bound_tool(BigLog(), policy=policy)])
    state = agent.invoke({"messages": [HumanMessage("read x.log")]})
    tool_message = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert len(tool_message.content.encode("utf-8")) <= 32 * KB
    sent = next(m for m in model.seen[-1] if isinstance(m, ToolMessage))
    assert sent.content == tool_message.content  # recorded == sent


def test_tool_functions_errors_and_async_calls_are_bounded(policy: Policy) -> None:
    def grep(pattern: str) -> str:
        """Search everything."""
        return FIVE_MB

    def failing(pattern: str) -> str:
        """Fail loudly."""
        raise ToolException("boom\n" + FIVE_MB[: 200 * KB])

    call = {"name": "grep", "args": {"pattern": "x"}, "id": "c1", "type": "tool_call"}
    message = bound_tool(grep, policy=policy).invoke(call)
    assert message.name == "grep" and len(message.content.encode()) <= 32 * KB

    wrapped = bound_tool(failing, policy=policy)
    wrapped.wrapped.handle_tool_error = True
    error = wrapped.invoke({**call, "name": "failing"})
    assert error.status == "error" and error.content.startswith("boom")
    assert len(error.content.encode()) <= 32 * KB

    result = asyncio.run(bound_tool(grep, policy=policy).ainvoke(call))
    assert len(result.content.encode()) <= 32 * KB


def _conversation(*contents: Any) -> list[BaseMessage]:
    calls = [{"name": "big_log", "args": {}, "id": f"c{i}"} for i in range(len(contents))]
    messages: list[BaseMessage] = [HumanMessage("go"), AIMessage("", tool_calls=calls)]
    messages += [ToolMessage(content, tool_call_id=f"c{i}") for i, content in enumerate(contents)]
    return messages


def test_tool_message_list_is_bounded_as_one_batch() -> None:
    policy = Policy(Config(batch_ceiling=64 * KB), sink=None, notices=False)
    messages = _conversation(FIVE_MB[: 30 * KB], [FIVE_MB[: 30 * KB], "second part"], "ok")
    before = copy.deepcopy(messages)
    out = bound_tool_messages(messages, policy)
    assert messages == before  # never modified
    first = len(out[2].content.encode())
    second = sum(len(p.encode()) for p in out[3].content)
    assert first + second + 2 <= 64 * KB
    assert out[3].content[1] == "second part"
    assert out[4] is messages[4]


def test_tool_names_come_from_the_ai_message_calls() -> None:
    policy = Policy(Config(tools={"big_log": "8KB"}), sink=None, notices=False)
    out = bound_tool_messages(_conversation(FIVE_MB[: 20 * KB]), policy)
    assert len(out[2].content.encode()) <= 8 * KB


def test_unchanged_conversations_come_back_equal(policy: Policy) -> None:
    plain = [HumanMessage("x" * 100_000), AIMessage("y" * 100_000)]
    assert bound_tool_messages(plain, policy) == plain
    once = bound_tool_messages(_conversation(FIVE_MB), policy)
    assert bound_tool_messages(once, policy) == once
    guarded = guard_tool_messages(once, policy)
    assert all(a is b for a, b in zip(guarded, once, strict=True))
    history = guard_tool_messages([*_conversation(FIVE_MB), AIMessage("next")], policy)
    assert len(history[2].content.encode()) <= 32 * KB


def test_an_image_in_a_tool_result_is_kept_and_replaced(policy: Policy, store: MemoryStore) -> None:
    import base64

    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 1200

    def screenshot() -> list[dict[str, Any]]:
        """Capture the screen."""
        return [{"type": "text", "text": "the screen"},
                {"type": "image", "base64": base64.b64encode(png).decode(),
                 "mime_type": "image/png"}]

    call = {"name": "screenshot", "args": {}, "id": "s1", "type": "tool_call"}
    message = bound_tool(screenshot, policy=policy).invoke(call)
    text, note = message.content
    assert text == {"type": "text", "text": "the screen"}
    assert note["type"] == "text" and "image image/png" in note["text"]
    assert store.read_bytes(note["text"].split("kept as ")[1].rstrip("]")) == png
