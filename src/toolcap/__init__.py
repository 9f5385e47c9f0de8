"""toolcap bounds what a tool call can put into an LLM conversation.

Per tool, per batch and on the wire, with nothing lost: what is cut is kept in an
artifact store that the model can read back.

>>> import toolcap
>>> result = toolcap.cap_text("x" * 100_000, "4KB")
>>> result.truncated, result.kept_bytes <= 4096
(True, True)
"""

from typing import TYPE_CHECKING

from ._config import Config, StoreLimits, ToolPolicy, load_config
from ._finalize import FinalizedResponse, Policy, ToolResponse
from ._keep import keep_lines
from ._tokenizer import token_counter
from .core._cut import CapResult, cap_text
from .core._errors import ConfigError, StoreError
from .core._json import json_size, project_json_blocks, project_json_text
from .core._lazy import lazy_names
from .core._marker import DEFAULT_MARKER
from .core._sizes import human_size, parse_limit, parse_size
from .core._tokens import estimate_tokens

if TYPE_CHECKING:
    from .adapters._compact import Compacted, CompactReport, compact
    from .adapters._decorator import bounded

__all__ = [
    "DEFAULT_MARKER",
    "CapResult",
    "CompactReport",
    "Compacted",
    "Config",
    "ConfigError",
    "FinalizedResponse",
    "Policy",
    "StoreError",
    "StoreLimits",
    "ToolPolicy",
    "ToolResponse",
    "__version__",
    "bounded",
    "cap_text",
    "compact",
    "estimate_tokens",
    "human_size",
    "json_size",
    "keep_lines",
    "load_config",
    "parse_limit",
    "parse_size",
    "project_json_blocks",
    "project_json_text",
    "token_counter",
]

__version__ = "0.1.0"


# ``bounded`` and ``compact`` live with the adapters; they are loaded on first use so
# that ``import toolcap`` loads no adapter (tests/test_package.py checks it).
_LAZY = {
    "bounded": "toolcap.adapters._decorator",
    "compact": "toolcap.adapters._compact",
    "Compacted": "toolcap.adapters._compact",
    "CompactReport": "toolcap.adapters._compact",
}


__getattr__, __dir__ = lazy_names("toolcap", _LAZY, globals())
