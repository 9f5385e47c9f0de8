"""Adapters between toolcap's finalization seam and the shapes of other libraries.

Each ecosystem has its own module, imported on demand so that none of their
SDKs is needed to import toolcap: ``toolcap.adapters.openai``,
``toolcap.adapters.anthropic``, ``toolcap.adapters.langchain`` and
``toolcap.adapters.mcp``.
"""

from ._decorator import bound_output, bounded

__all__ = ["bound_output", "bounded"]
