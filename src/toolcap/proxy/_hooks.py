"""What the proxy changes in the messages it intercepts.

* tools/call results: bounded by :mod:`toolcap.adapters.mcp` (the upstream
  tool's policy, one call = one batch, errors too, then the wire budget).
* resources/read results: the same rules, under the policy name
  ``resource:<scheme>``; prompts/get results under ``prompt:<name>``.
* tools/list: a tool's ``outputSchema`` is kept when the structural cut can
  honour it (:func:`toolcap.core._schemaguide.guide_for`): its results' cut
  ``structuredContent`` still validates. Any other is withheld: a client that
  knows a tool's output schema rejects a result that does not validate.
  The proxy's own ``read_artifact`` tool is added on the first page; an
  upstream that is itself a toolcap proxy has its reader hidden, and a read of a
  reference this proxy's store does not hold is passed to it. Every tool
  says in ``_meta["anthropic/maxResultSizeChars"]`` the bound its results keep
  to, so that a host that bounds results itself does not cut them again.
"""

from __future__ import annotations

from typing import Any

from .._config import ToolPolicy
from .._diagnostics import observe
from .._finalize import Policy
from ..adapters.mcp import (
    bound_call_tool_result_dict,
    bound_get_prompt_result_dict,
    bound_read_resource_result_dict,
    result_limit,
)
from ..core._errors import ArtifactNotFoundError, StoreError
from ..core._json import project_json_text
from ..core._schemaguide import guide_for
from ..protocols import ArtifactReader
from ._artifact import is_toolcap_reader, read_artifact_definition, read_artifact_result
from ._contracts import PROXY_ERROR, ToolNameConflict

__all__ = ["ProxyHooks"]

#: The tool ``_meta`` key by which a host learns how long a tool's results can be.
MAX_RESULT_KEY = "anthropic/maxResultSizeChars"
# Tools whose least limit fits() keeps worked out at once.
_LEAST_LIMITS_KEPT = 1024


class ProxyHooks:
    """The bounding layer of the relay (it implements :class:`toolcap.proxy._contracts.Hooks`)."""

    def __init__(
        self,
        policy: Policy,
        *,
        read_artifact_name: str | None = "read_artifact",
        wire_budget: int | None = None,
    ) -> None:
        self.policy = policy
        self.read_artifact_name = read_artifact_name
        self.wire_budget = wire_budget
        #: The name of the upstream's own reader, when the upstream is a toolcap proxy.
        self.upstream_reader: str | None = None
        #: The output schemas kept in tools/list, by tool: their results are cut to them.
        self.output_schemas: dict[str, dict[str, Any]] = {}
        #: The tools a listing has shown (their schemas are known).
        self.listed: set[str] = set()
        self._least_limits: dict[str | None, int | None] = {}  # fits(), by tool

    def fits(self, tool: str | None, size: int) -> bool:
        # The JSON of a message is at least as large as the UTF-8 text, media
        # and structured content in it, so a message no larger than every limit
        # is within them all. (A resource's policy name is only known later.)
        if tool in self._least_limits:
            least = self._least_limits[tool]
        else:  # worked out once a tool (every message asks), for a bounded set of names
            least = self._least_limit(tool)
            if len(self._least_limits) >= _LEAST_LIMITS_KEPT:
                self._least_limits.clear()  # names a client makes up do not grow it
            self._least_limits[tool] = least
        return least is None or size <= least

    def _least_limit(self, tool: str | None) -> int | None:
        config = self.policy.config
        limits = [config.batch_ceiling, config.media_threshold, self.wire_budget]
        limits.append(self.policy.for_tool(tool).size_threshold if tool is not None else None)
        if tool is None:
            limits.extend(policy.get("size_threshold") for policy in config.tools.values())
            limits.append(ToolPolicy().size_threshold)  # the built-in default, for unlisted tools
        return min((limit for limit in limits if limit is not None), default=None)

    def result_bound(self, tool: str | None) -> int | None:
        """The most a result of ``tool`` holds after bounding, in characters (every
        limit is in UTF-8 bytes, and a character is at least one); None if unbounded."""
        return result_limit(self.policy, tool, self.wire_budget)

    def _advertised(self, tool: dict[str, Any]) -> dict[str, Any]:
        bound = self.result_bound(tool.get("name") if isinstance(tool.get("name"), str) else None)
        if bound is None:
            return tool
        meta = tool.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        return {**tool, "_meta": {**meta, MAX_RESULT_KEY: bound}}

    def tool_result(self, tool: str, call_id: Any, result: dict[str, Any]) -> dict[str, Any] | None:
        bounded = bound_call_tool_result_dict(
            result,
            self.policy,
            tool=tool,
            call_id=None if call_id is None else str(call_id),
            wire_budget=self.wire_budget,
            output_schema=self.output_schemas.get(tool),
            upstream_reads=self.upstream_reader is not None,
        )
        return bounded.result if bounded.changed else None

    def resource_result(
        self, uri: str, call_id: Any, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        bounded = bound_read_resource_result_dict(
            result,
            self.policy,
            uri=uri,
            call_id=None if call_id is None else str(call_id),
            wire_budget=self.wire_budget,
            upstream_reads=self.upstream_reader is not None,
        )
        return bounded.result if bounded.changed else None

    def prompt_result(
        self, name: str, call_id: Any, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        bounded = bound_get_prompt_result_dict(
            result,
            self.policy,
            name=name,
            call_id=None if call_id is None else str(call_id),
            wire_budget=self.wire_budget,
            upstream_reads=self.upstream_reader is not None,
        )
        return bounded.result if bounded.changed else None

    def tools_list(self, result: dict[str, Any], first_page: bool) -> dict[str, Any]:
        tools = result.get("tools")
        if not isinstance(tools, list):
            return result
        name = self.read_artifact_name
        out: list[Any] = []
        for tool in tools:
            if isinstance(tool, dict):
                if name is not None and is_toolcap_reader(tool):
                    # A proxy in front of a proxy: one reader, which reads both stores.
                    self.upstream_reader = tool["name"]
                    continue
                if name is not None and tool.get("name") == name:
                    raise ToolNameConflict(
                        f"the upstream server already has a tool named {name!r}; "
                        "choose another name with --read-artifact-tool NAME, or "
                        "turn the proxy's tool off with --no-read-artifact"
                    )
                if isinstance(tool.get("name"), str):
                    self.listed.add(tool["name"])
                if "outputSchema" in tool:
                    tool = self._output_schema(tool)
                tool = self._advertised(tool)
            out.append(tool)
        if first_page and name is not None:
            out.append(self._advertised(read_artifact_definition(name)))
        return {**result, "tools": out}

    def has_output_schema(self, tool: str) -> bool:
        return tool in self.output_schemas

    def listed_tool(self, tool: str) -> bool:
        return tool in self.listed

    def _output_schema(self, tool: dict[str, Any]) -> dict[str, Any]:
        """``tool`` with its output schema if the cut can honour it, else without."""
        schema, name = tool["outputSchema"], tool.get("name")
        if isinstance(name, str) and isinstance(schema, dict) and guide_for(schema) is not None:
            self.output_schemas[name] = schema
            return tool
        if isinstance(name, str):
            self.output_schemas.pop(name, None)
        return {k: v for k, v in tool.items() if k != "outputSchema"}

    def read_artifact(self, call_id: Any, arguments: Any) -> dict[str, Any]:
        assert self.read_artifact_name is not None
        sink = self.policy.sink
        result = read_artifact_result(sink, arguments)
        bounded = self.tool_result(self.read_artifact_name, call_id, result)
        return result if bounded is None else bounded

    def upstream_read(self, arguments: Any) -> str | None:
        """The upstream tool to pass a ``read_artifact`` call to (an upstream toolcap's
        reader, when this store does not hold the reference), or None to answer here."""
        reader = self.upstream_reader
        ref = arguments.get("ref") if isinstance(arguments, dict) else None
        if reader is None or not isinstance(ref, str):
            return None
        sink = self.policy.sink
        if isinstance(sink, ArtifactReader):
            try:
                sink.stat(ref.strip())
            except ArtifactNotFoundError:
                return reader
            except Exception:  # a malformed reference: this proxy's answer says so
                return None
            return None
        return reader

    def written(self, tool: str, call_id: Any, frame: bytes, *, changed: bool) -> None:
        observe(
            "written",
            "frame",
            frame,
            tool=tool,
            call_id=None if call_id is None else str(call_id),
            changed=changed,
            wire_budget=self.wire_budget,
        )

    def open_writer(self, tool: str | None) -> Any:
        sink = self.policy.sink
        opener = getattr(sink, "open_writer", None)
        if opener is None:
            raise StoreError(getattr(sink, "reason", None) or "no artifact store")
        return opener(tool=tool)

    def error_text(self, text: str) -> str:
        if self.wire_budget is None:
            return text
        return project_json_text(text, self.wire_budget)

    def error_answer(self, message: dict[str, Any], size: int) -> dict[str, Any]:
        if self.fits(None, size):
            return message  # errors are small as a rule; their data may matter
        # Over a limit, only the error's code and its bounded message go on: its data
        # and any other member can be anything, of any size, and so can an answer
        # that is neither a result object nor an error with a message.
        error = message.get("error")
        error = error if isinstance(error, dict) else {}
        code, text = error.get("code"), error.get("message")
        if not isinstance(text, str):
            text = (f"toolcap proxy: the upstream server's answer ({size} bytes) was "
                    "neither a result nor an error with a message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = PROXY_ERROR
        return {"jsonrpc": "2.0", "id": message.get("id"),
                "error": {"code": code, "message": self.error_text(text)}}
