"""Compaction in a LangGraph agent: the pre-model hook, with the real LangGraph."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from _langchain import Recording
from toolcap.adapters.langchain import compact_tool_messages, compaction_hook
from toolcap.store import MemoryStore

KB = 1024
CALLS = 12


@tool
def read_log(day: int) -> str:
    """Read one day's log."""
    return "".join(f"day {day} line {n}: ok\n" for n in range(1500))


def _tool_bytes(messages: list[BaseMessage]) -> int:
    return sum(len(str(m.content).encode()) for m in messages if isinstance(m, ToolMessage))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_pre_model_hook_keeps_the_agent_state_compacted() -> None:
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    script = [AIMessage("", tool_calls=[{"name": "read_log", "args": {"day": d}, "id": f"c{d}"}])
              for d in range(CALLS)] + [AIMessage("done")]
    model = Recording(messages=iter(script))
    store = MemoryStore()
    hook = compaction_hook(trigger="100KB", target="50KB", keep_recent=0, store=store)
    agent = prebuilt.create_react_agent(model, [read_log], pre_model_hook=hook)
    state = agent.invoke({"messages": [HumanMessage("read the logs")]})

    messages = state["messages"]
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tools] == [f"c{d}" for d in range(CALLS)]
    masked = [m for m in tools if str(m.content).startswith("[toolcap: compacted read_log")]
    assert masked, "older outputs were masked in the state"
    reference = masked[0].content.split("kept as ")[1][:40]
    assert store.read_bytes(reference) == read_log.invoke({"day": 0}).encode()
    assert all(_tool_bytes(sent) <= 100 * KB + 30 * KB for sent in model.seen)
    assert compact_tool_messages(messages, trigger="100KB", target="50KB", keep_recent=0,
                                 store=store) == messages
