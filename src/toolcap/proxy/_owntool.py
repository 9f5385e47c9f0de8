"""The relay's side of the proxy's own ``read_artifact`` tool (:mod:`~toolcap.proxy._artifact`).

A call of it is answered by the proxy, on a worker thread (a read of the store
must not hold up the client's other messages), or, for a reference this
proxy's store does not hold, passed to an upstream toolcap's reader under that
reader's name. An upstream with no tools still gets one: its ``initialize``
result advertises tools, and the proxy answers ``tools/list`` itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._contracts import Hooks, dumps
from ._pending import Pending, PendingTable
from ._revision import empty_tools_list, text_result

__all__ = ["OwnTool"]

log = logging.getLogger("toolcap.proxy")

#: Answers a request: its id, its result, and whether the result names its ``resultType``.
Reply = Callable[[Any, dict[str, Any], bool], None]


class OwnTool:
    """Answers the requests for the proxy's own tool, and advertises it where the
    upstream has no tools."""

    def __init__(self, hooks: Hooks, pending: PendingTable, reply: Reply,
                 to_upstream: Callable[[bytes], None]) -> None:
        self._hooks = hooks
        self._pending = pending
        self._reply = reply
        self._to_upstream = to_upstream
        #: False once the upstream's ``initialize`` result shows it has no tools.
        self.upstream_has_tools = True
        self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="toolcap-artifact")

    def take(self, method: str, message: dict[str, Any], params: dict[str, Any],
             typed: bool) -> bool:
        """Answer the request ``message`` (its ``params``, or {}) if it is the proxy's
        to answer (a call of its tool, or a listing of an upstream with none); False
        if it is not."""
        if method == "tools/call":
            name = params.get("name")
            if name is not None and name == self._hooks.read_artifact_name:
                self._workers.submit(self._read, message["id"], message, typed)
                return True
        elif method == "tools/list" and not self.upstream_has_tools:
            result = self._hooks.tools_list(empty_tools_list(typed), True)
            self._reply(message["id"], result, typed)
            return True
        return False

    def initialize_result(self, result: dict[str, Any]) -> dict[str, Any] | None:
        """The upstream's ``initialize`` result with tools advertised, if it has none
        and the proxy offers its tool; None to leave it as it is."""
        capabilities = result.get("capabilities")
        if not isinstance(capabilities, dict) or self._hooks.read_artifact_name is None:
            return None
        if "tools" in capabilities:
            return None
        # The upstream has no tools, but the proxy offers read_artifact for what
        # it cuts from resources: advertise tools and answer tools/list here.
        self.upstream_has_tools = False
        return {**result, "capabilities": {**capabilities, "tools": {}}}

    def close(self) -> None:
        """The relay has ended: reads not yet started are dropped."""
        self._workers.shutdown(wait=False, cancel_futures=True)

    def _read(self, call_id: Any, message: dict[str, Any], typed: bool) -> None:
        params = message["params"]
        reader = self._hooks.upstream_read(params.get("arguments"))
        if reader is not None:  # not in this store: the upstream toolcap's reader may hold it
            self._pending.track(call_id, Pending("tools/call", params["name"], typed))
            self._to_upstream(dumps({**message, "params": {**params, "name": reader}}))
            return
        try:
            result = self._hooks.read_artifact(call_id, params.get("arguments"))
        except Exception as exc:  # a bug here must not take the relay down
            log.exception("read_artifact failed")
            result = text_result(f"read_artifact failed: {exc}", is_error=True)
        self._reply(call_id, result, typed)
