"""Anthropic Messages: ``tool_result`` blocks in the user turn.

One line in the agent loop, after the user turn with the tool results is
appended and before the next request::

    messages = toolcap.adapters.anthropic.bound_messages(messages)

The ``tool_result`` blocks answering the latest assistant turn are finalized as
one batch, each under the policy of the tool named by the ``tool_use`` block
with its ``tool_use_id``. String content and the text blocks of list content are
bounded; an image (or document) block whose base64 data is over
``media_threshold`` is kept in the artifact store and replaced by a text block
naming it. The list given is never modified; what is returned is what to record
and what to send.

:func:`guard_messages` is the send-boundary guard: no I/O, every batch of the
history checked, an already bounded conversation returned unchanged.

Plain dicts work, and so do the ``anthropic`` package's TypedDict params and its
response objects (``Message``, ``ToolUseBlock``, …) appended as they came; the
package is never imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast

from .._finalize import Policy
from ._common import changes, field, resolve, with_field
from ._compact import compact
from ._shapes import message_entries

__all__ = ["bound_messages", "compact_messages", "guard_messages", "guard_request"]

T = TypeVar("T")


def _bound(messages: Iterable[T], policy: Policy | None, *, io: bool, history: bool,
           usage: Any = None) -> list[T]:
    items: list[Any] = list(messages)
    found = changes(message_entries(items), resolve(policy), io=io, history=history,
                    messages=items, usage=usage)
    by_message: dict[int, list[tuple[int, Any]]] = {}
    for (index, position), content in found:
        by_message.setdefault(index, []).append((position, content))
    for index, updates in by_message.items():
        blocks = list(field(items[index], "content"))
        for position, content in updates:
            blocks[position] = with_field(blocks[position], "content", content)
        items[index] = with_field(items[index], "content", blocks)
    return cast("list[T]", items)


def bound_messages(
    messages: Iterable[T], policy: Policy | None = None, *, usage: Any = None
) -> list[T]:
    """Bound the ``tool_result`` blocks answering the latest assistant turn, as one batch.

    Args:
        messages: the ``messages`` of a Messages API request (dicts or SDK types).
        policy: the :class:`~toolcap.Policy`; by default, the configuration found
            from the working directory and the environment.
        usage: the last response's ``usage`` (``input_tokens``, cached tokens
            added): with ``context_window`` configured, the batch ceiling shrinks
            as the window fills; without it, the messages are measured.

    Returns:
        A new list; the input is not modified. Messages without a changed
        result are the same objects.
    """
    return _bound(messages, policy, io=True, history=False, usage=usage)


def guard_messages(messages: Iterable[T], policy: Policy | None = None) -> list[T]:
    """The send-boundary guard: no I/O at all, every batch of the history checked.

    Nothing is stored, printed or logged; a cut or a replaced image names no
    artifact. An already bounded conversation comes back equal, item for item
    the same objects.

    With no ``policy``, the configuration is read on first use and kept (that read
    is the only I/O, once per process); pass a policy to leave out even that.
    """
    return _bound(messages, policy, io=False, history=True)


def guard_request(request: Mapping[str, Any], policy: Policy | None = None) -> dict[str, Any]:
    """:func:`guard_messages` applied to the ``messages`` of a request's arguments.

    ``client.messages.create(**guard_request(request))``.
    """
    return {**request, "messages": guard_messages(request.get("messages") or (), policy)}


def compact_messages(messages: Iterable[T], **options: Any) -> list[T]:
    """:func:`toolcap.compact` of Messages API ``messages``; the new list only.

    ``messages = compact_messages(messages, trigger="512KB")`` before each request
    masks the oldest ``tool_result`` contents once they pass the trigger (see
    :func:`toolcap.compact` for ``options`` and the report).
    """
    return compact(messages, format="anthropic", **options).messages
