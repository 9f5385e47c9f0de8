"""LangChain / LangGraph with toolcap: wrap the tools, change nothing else.

Runs offline with a scripted chat model; with ``langgraph`` installed the same
wrapped tool goes into a ``create_react_agent`` agent unchanged.

    python examples/langchain_tool.py
"""

from __future__ import annotations

import warnings

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from toolcap.adapters.langchain import bound_tool, bound_tool_messages


@tool
def read_log(path: str) -> str:
    """Read a log file."""
    return "".join(f"{i:07d} INFO request served in 3 ms\n" for i in range(150_000))  # ~5 MB


safe_read_log = bound_tool(read_log)  # same name, description and schema; bounded results

# LangChain's own tool-calling path: the model asks, the tool answers with a ToolMessage.
call = {"name": "read_log", "args": {"path": "app.log"}, "id": "call_1", "type": "tool_call"}
message = safe_read_log.invoke(call)
print(f"ToolMessage for {message.name}: {len(message.content):,} characters")

# A whole turn's ToolMessages, bounded together (batch ceiling across the calls).
history = [
    HumanMessage("Compare the two logs."),
    AIMessage("", tool_calls=[{"name": "read_log", "args": {"path": p}, "id": p}
                              for p in ("a.log", "b.log")]),
    *[ToolMessage(read_log.invoke({"path": p}), tool_call_id=p) for p in ("a.log", "b.log")],
]
bounded = bound_tool_messages(history)
print("sizes sent:", [len(m.content) for m in bounded[2:]])

try:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.prebuilt import create_react_agent
except ImportError:
    raise SystemExit(0) from None


class ScriptedModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):  # the script needs no tool schemas
        return self


model = ScriptedModel(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("Quiet day.")]))
warnings.simplefilter("ignore", DeprecationWarning)  # create_react_agent moved in LangGraph 1.0
agent = create_react_agent(model, [safe_read_log])  # the wrapped tool, nothing else changes
state = agent.invoke({"messages": [HumanMessage("How busy was app.log?")]})
print("agent saw:", [len(m.content) for m in state["messages"] if isinstance(m, ToolMessage)])
