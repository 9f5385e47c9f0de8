"""Names a package exports but loads only when first used (a module ``__getattr__``).

A package that re-exports its parts makes ``import package.part`` load them all;
loading them on first use keeps a command's start-up to what it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for ``names`` (each name, and
    the module that defines it); ``namespace`` is the package's ``globals()``."""

    def get(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # found directly from now on
        return value

    def listing() -> list[str]:
        return sorted({*namespace, *names})

    return get, listing
