"""The one spelling of "leave it to the configuration": the string ``"default"``.

A parameter whose value may come from the configuration (the policy's artifact
store, a stream's threshold and ceiling, the media limit of an MCP result, whether
notices are printed) takes :data:`DEFAULT` for that, and that is its default.
``None`` is never used for it, because ``None`` already means *none* there: no
store, no limit. Test for it with ``value == DEFAULT``.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["DEFAULT", "Default"]

#: The type of :data:`DEFAULT`, for annotations: ``Limit | Default``.
Default = Literal["default"]

#: "Use what the configuration says."
DEFAULT: Final[Default] = "default"
