"""``@bounded``: bound what a plain Python tool function returns.

::

    @toolcap.bounded(tool="Read")
    def read(path: str) -> str:
        return Path(path).read_text()

Each call's result goes through the finalization seam as a batch of one: the
tool's ``size_threshold``, the batch ceiling, the full original kept in the
artifact store, a notice when it was cut. A ``str`` result comes back as ``str``,
``bytes`` as ``bytes`` (the UTF-8 of the bounded text); a result that fits is
returned as the same object, and any other value passes untouched. Coroutine
functions are wrapped as coroutine functions.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from .._finalize import Policy, ToolResponse
from ._common import resolve

__all__ = ["bound_output", "bounded"]

F = TypeVar("F", bound=Callable[..., Any])


def bound_output(
    value: Any, *, tool: str, policy: Policy | None = None, call_id: str | None = None
) -> Any:
    """Bound one tool result (``str`` or ``bytes``) as a batch of one; others pass.

    Returns the same object when nothing was cut.
    """
    if not isinstance(value, (str, bytes)):
        return value
    final = resolve(policy).finalize([ToolResponse(tool, value, call_id)])[0]
    if final.capped_by is None or final.parts is None:
        return value
    text = final.parts[0]
    return text.encode("utf-8") if isinstance(value, bytes) else text


@overload
def bounded(function: F, /) -> F: ...


@overload
def bounded(
    function: None = None, /, *, tool: str | None = None, policy: Policy | None = None
) -> Callable[[F], F]: ...


def bounded(
    function: F | None = None, /, *, tool: str | None = None, policy: Policy | None = None
) -> F | Callable[[F], F]:
    """Decorate a tool function so that what it returns is bounded.

    Args:
        function: the function, when used bare (``@bounded``).
        tool: the tool's name, which selects its policy (``[tools.NAME]``);
            default: the function's ``__name__``.
        policy: the :class:`~toolcap.Policy`; by default, the configuration found
            from the working directory and the environment, loaded on first call.

    The wrapper keeps the function's name, docstring and signature (so
    frameworks that read them, such as LangChain's ``@tool``, see the original).
    """

    def decorate(func: F) -> F:
        name = tool or getattr(func, "__name__", None) or "tool"
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return bound_output(await func(*args, **kwargs), tool=name, policy=policy)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return bound_output(func(*args, **kwargs), tool=name, policy=policy)

        return wrapper  # type: ignore[return-value]

    if function is not None:
        return decorate(function)
    return decorate
