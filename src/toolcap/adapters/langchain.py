"""LangChain and LangGraph: ``ToolMessage`` lists, and any tool, bounded.

Two ways in, which can be combined:

* :func:`bound_tool` wraps a ``BaseTool`` (or a tool function) so that every
  result it gives is bounded: an agent built with LangChain or LangGraph
  (``bind_tools``, ``ToolNode``, ``create_agent``…) takes the wrapped tool
  where it took the original and needs no other change. Each call is a batch
  of one: the tool's ``size_threshold`` and the batch ceiling.
* :func:`bound_tool_messages` bounds the ``ToolMessage`` objects answering the
  latest ``AIMessage`` as one batch, so the batch ceiling holds across several
  tool calls of one turn (for example in a pre-model hook).

:func:`guard_tool_messages` is the send-boundary guard: no I/O, every batch.
Needs the extra ``toolcap[langchain]`` (``langchain-core``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

try:
    from langchain_core.tools import BaseTool
    from langchain_core.tools import tool as make_tool
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolcap.adapters.langchain needs langchain-core: pip install 'toolcap[langchain]'"
    ) from error

from pydantic import ConfigDict

from .._finalize import Policy
from ._common import (
    Result,
    bound_contents,
    changes,
    field,
    resolve,
    with_field,
)
from ._compact import compact
from ._shapes import is_error_message, langchain_entries

__all__ = [
    "BoundedTool",
    "bound_tool",
    "bound_tool_messages",
    "compact_tool_messages",
    "compaction_hook",
    "guard_tool_messages",
]

T = TypeVar("T")


def _bound(messages: Iterable[T], policy: Policy | None, *, io: bool, history: bool) -> list[T]:
    items: list[Any] = list(messages)
    # The latest AIMessage carries the prompt size its provider reported.
    usage = next((field(m, "usage_metadata") for m in reversed(items)
                  if field(m, "type") in ("ai", "AIMessageChunk")), None)
    found = changes(langchain_entries(items), resolve(policy), io=io, history=history,
                    messages=items, usage=usage)
    for index, content in found:
        items[index] = with_field(items[index], "content", content)
    return cast("list[T]", items)


def bound_tool_messages(messages: Iterable[T], policy: Policy | None = None) -> list[T]:
    """Bound the ``ToolMessage`` objects answering the latest ``AIMessage``, as one batch.

    A list of ``ToolMessage`` objects alone (what a ``ToolNode`` returns) is one
    batch. Each message's tool is named by the matching tool call, else by its
    own ``name``. With ``context_window`` configured, the batch ceiling shrinks as
    the window fills (the latest ``AIMessage``'s ``usage_metadata`` says how full it
    is). Returns a new list; changed messages are copies
    (``model_copy``), the others the same objects; the input is not modified.
    """
    return _bound(messages, policy, io=True, history=False)


def guard_tool_messages(messages: Iterable[T], policy: Policy | None = None) -> list[T]:
    """The send-boundary guard: no I/O at all, every batch of the history checked.

    With no ``policy``, the configuration is read on first use and kept (that read
    is the only I/O, once per process); pass a policy to leave out even that.
    """
    return _bound(messages, policy, io=False, history=True)


def _bound_output(output: Any, tool: str, policy: Policy | None) -> Any:
    """Bound what a tool's ``run`` gave: a ``ToolMessage``, a list of them, or a string."""
    if isinstance(output, str):
        return bound_contents([Result(tool, output)], resolve(policy), io=True)[0]
    many = isinstance(output, list) and bool(output) and all(_is_tool_message(m) for m in output)
    if not many and not _is_tool_message(output):
        return output  # a Command, a structured value: not text this layer can bound
    messages: list[Any] = list(output) if many else [output]
    results = [Result(tool, m.content, m.tool_call_id, is_error_message(m)) for m in messages]
    contents = bound_contents(results, resolve(policy), io=True)
    bounded = [
        m if new is m.content else with_field(m, "content", new)
        for m, new in zip(messages, contents, strict=True)
    ]
    return bounded if many else bounded[0]


def _is_tool_message(value: Any) -> bool:
    return bool(field(value, "type") == "tool" and hasattr(value, "tool_call_id"))


class BoundedTool(BaseTool):
    """A tool whose results are bounded; name, description and schema are the wrapped tool's.

    Running it runs the wrapped tool (its callbacks, validation and error
    handling included) and bounds the result: the ``ToolMessage`` when called
    with a tool call, the string when called with plain arguments. Error
    results (``status="error"``) are bounded too.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    wrapped: BaseTool
    policy: Any = None
    policy_name: str | None = None

    def get_input_schema(self, config: Any = None) -> Any:
        """The wrapped tool's input schema."""
        return self.wrapped.get_input_schema(config)

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - run() delegates
        raise NotImplementedError("BoundedTool runs through run()/arun()")

    def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        """Run the wrapped tool and bound what it gives."""
        output = self.wrapped.run(tool_input, *args, **kwargs)
        return _bound_output(output, self.policy_name or self.name, self.policy)

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        """Run the wrapped tool asynchronously and bound what it gives."""
        output = await self.wrapped.arun(tool_input, *args, **kwargs)
        return _bound_output(output, self.policy_name or self.name, self.policy)


def bound_tool(
    tool: BaseTool | Callable[..., Any], *, policy: Policy | None = None, name: str | None = None
) -> BoundedTool:
    """Wrap a LangChain tool (or a function, made a tool with ``@tool``) so its results are bounded.

    Args:
        tool: a ``BaseTool``, or a function LangChain's ``tool()`` accepts.
        policy: the :class:`~toolcap.Policy`; default: the configured one.
        name: the policy name (``[tools.NAME]``); default: the tool's name.

    The wrapper has the tool's name, description, argument schema, and
    ``return_direct``, so the model sees the same tool.
    """
    inner = tool if isinstance(tool, BaseTool) else make_tool(tool)
    if not isinstance(inner, BaseTool):  # pragma: no cover - tool() on a function gives one
        raise TypeError(f"cannot make a tool of {tool!r}")
    schema = inner.args_schema if inner.args_schema is not None else inner.get_input_schema()
    return BoundedTool(
        wrapped=inner,
        policy=policy,
        policy_name=name,
        name=inner.name,
        description=inner.description,
        args_schema=schema,
        return_direct=inner.return_direct,
        response_format=inner.response_format,
        tags=inner.tags,
        metadata=inner.metadata,
        extras=inner.extras,
    )


# -- compaction ------------------------------------------------------------------------------


def compact_tool_messages(messages: Iterable[T], **options: Any) -> list[T]:
    """:func:`toolcap.compact` of LangChain messages; the new list only (changed
    ``ToolMessage`` objects are copies with the same ids)."""
    return compact(messages, format="langchain", **options).messages


def compaction_hook(**options: Any) -> Callable[[Any], dict[str, Any]]:
    """A LangGraph pre-model hook that compacts the agent's ``messages`` state.

    ``create_react_agent(model, tools, pre_model_hook=compaction_hook(trigger="512KB"))``.
    When something is masked, the state's messages are replaced (so the next turn
    starts from the compacted conversation and the prompt prefix stays stable);
    otherwise they are passed to the model as they are. ``options`` are those of
    :func:`toolcap.compact`.
    """
    from langchain_core.messages import RemoveMessage

    def hook(state: Any) -> dict[str, Any]:
        messages = list(field(state, "messages") or ())
        compacted, report = compact(messages, format="langchain", **options)
        if not report.masked:
            return {"llm_input_messages": messages}
        return {"messages": [RemoveMessage(id="__remove_all__"), *compacted]}

    return hook
