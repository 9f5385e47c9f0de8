"""OpenAI: Chat Completions ``messages`` and Responses API ``input`` items.

One line in the agent loop, after the tool results are appended and before the
next request::

    messages = toolcap.adapters.openai.bound_chat_messages(messages)

The tool results answering the latest assistant turn (``role: "tool"`` messages,
or ``function_call_output`` items) are finalized as one batch: each tool's
``size_threshold`` (the tool's name is found from the matching call), the batch
ceiling, the full original kept in the artifact store, a notice per cut. The
list given is never modified; the list returned holds the same objects except
for the results that changed, which are copies. What it returns is what to
record and what to send.

The ``guard_*`` functions are the send-boundary guard: no I/O at all, every batch
of the history checked, any result over its threshold bounded. They return an
already bounded conversation unchanged (an equal list of the same objects).

Plain dicts work, and so do the ``openai`` package's own types (its TypedDict
params, ``ChatCompletionMessage`` and the Responses output items appended as
they came); the package is never imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast

from .._finalize import Policy
from ._common import changes, resolve, with_field
from ._compact import compact
from ._shapes import chat_entries, responses_entries

__all__ = [
    "bound_chat_messages",
    "bound_responses_input",
    "compact_chat_messages",
    "compact_responses_input",
    "guard_chat_messages",
    "guard_chat_request",
    "guard_responses_input",
    "guard_responses_request",
]

T = TypeVar("T")


# -- Chat Completions ------------------------------------------------------------------


def _chat(messages: Iterable[T], policy: Policy | None, *, io: bool, history: bool,
          usage: Any = None) -> list[T]:
    items: list[Any] = list(messages)
    found = changes(chat_entries(items), resolve(policy), io=io, history=history,
                    messages=items, usage=usage)
    for index, content in found:
        items[index] = with_field(items[index], "content", content)
    return cast("list[T]", items)


def bound_chat_messages(
    messages: Iterable[T], policy: Policy | None = None, *, usage: Any = None
) -> list[T]:
    """Bound the tool messages answering the latest assistant turn, as one batch.

    Args:
        messages: a Chat Completions ``messages`` list (dicts or SDK objects).
        policy: the :class:`~toolcap.Policy`; by default, the configuration found
            from the working directory and the environment.
        usage: the last response's ``usage`` (or its ``prompt_tokens``): with
            ``context_window`` configured, the batch ceiling shrinks as it fills;
            without it, the messages are measured.

    Returns:
        A new list; the input is not modified. Tool messages with string content
        or text content parts are bounded; other messages are the same objects.
    """
    return _chat(messages, policy, io=True, history=False, usage=usage)


def guard_chat_messages(messages: Iterable[T], policy: Policy | None = None) -> list[T]:
    """The send-boundary guard for a ``messages`` list: no I/O, every batch checked.

    Each group of tool messages answering one assistant turn is checked as a
    batch, so a conversation loaded from elsewhere is bounded too. Nothing is
    stored, printed or logged; a cut names no artifact.

    With no ``policy``, the configuration is read on first use and kept (that read
    is the only I/O, once per process); pass a policy to leave out even that.
    """
    return _chat(messages, policy, io=False, history=True)


def guard_chat_request(request: Mapping[str, Any], policy: Policy | None = None) -> dict[str, Any]:
    """:func:`guard_chat_messages` applied to the ``messages`` of a request's arguments.

    ``client.chat.completions.create(**guard_chat_request(request))``.
    """
    return {**request, "messages": guard_chat_messages(request.get("messages") or (), policy)}


# -- Responses API -----------------------------------------------------------------------

def _responses(items: Iterable[T], policy: Policy | None, *, io: bool, history: bool,
               usage: Any = None) -> list[T]:
    listed: list[Any] = list(items)
    found = changes(responses_entries(listed), resolve(policy), io=io, history=history,
                    note_type="input_text", messages=listed, usage=usage)
    for index, output in found:
        listed[index] = with_field(listed[index], "output", output)
    return cast("list[T]", listed)


def bound_responses_input(
    items: Iterable[T], policy: Policy | None = None, *, usage: Any = None
) -> list[T]:
    """Bound the ``function_call_output`` items answering the latest model turn.

    The latest turn is the last run of model items (``function_call``,
    ``reasoning``, assistant messages); the outputs after it are one batch, each
    named by the ``function_call`` with its ``call_id``. String outputs and the
    ``input_text`` parts of list outputs are bounded; an ``input_image`` or
    ``input_file`` whose base64 data is over ``media_threshold`` is kept and
    replaced by an ``input_text`` part naming it. ``usage``: the last response's
    ``usage``, for ``context_window`` (see :func:`bound_chat_messages`).

    Returns:
        A new list; the input is not modified.
    """
    return _responses(items, policy, io=True, history=False, usage=usage)


def guard_responses_input(items: Iterable[T], policy: Policy | None = None) -> list[T]:
    """The send-boundary guard for Responses ``input`` items: no I/O, every batch.

    With no ``policy``, the configuration is read on first use and kept (that read
    is the only I/O, once per process); pass a policy to leave out even that.
    """
    return _responses(items, policy, io=False, history=True)


def guard_responses_request(
    request: Mapping[str, Any], policy: Policy | None = None
) -> dict[str, Any]:
    """:func:`guard_responses_input` applied to a request's ``input`` (a string passes)."""
    given = request.get("input")
    if given is None or isinstance(given, str):
        return dict(request)
    return {**request, "input": guard_responses_input(given, policy)}




# -- compaction ------------------------------------------------------------------------------


def compact_chat_messages(messages: Iterable[T], **options: Any) -> list[T]:
    """:func:`toolcap.compact` of a Chat Completions ``messages`` list; the new list only.

    ``messages = compact_chat_messages(messages, trigger="512KB")`` before each
    request masks the oldest tool outputs once they pass the trigger (see
    :func:`toolcap.compact` for ``options`` and the report).
    """
    return compact(messages, format="chat", **options).messages


def compact_responses_input(items: Iterable[T], **options: Any) -> list[T]:
    """:func:`toolcap.compact` of Responses ``input`` items; the new list only."""
    return compact(items, format="responses", **options).messages
