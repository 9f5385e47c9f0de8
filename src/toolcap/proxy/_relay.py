"""The JSON-RPC relay between an MCP client (our stdin/stdout) and an upstream server.

Every message is forwarded as the exact bytes it arrived as, except the few the
proxy must change: the results of ``initialize`` (to advertise tools when the
proxy adds one), ``tools/list`` (to add ``read_artifact``, withhold output
schemas a cut could break), ``tools/call``, ``resources/read`` and
``prompts/get`` (to bound them), and the proxy's own ``read_artifact`` calls,
which it answers itself or passes to an upstream toolcap
(:mod:`~toolcap.proxy._owntool`). Request ids are never rewritten, so requests
the upstream sends to the client (sampling, elicitation, roots), their
responses, progress and cancellation notifications all pass through untouched,
and so do methods and fields this code does not know. A line too long to read,
or not JSON, is :mod:`~toolcap.proxy._unread`'s. Each line is parsed once (to
learn its id and method); everything else about a message costs time linear in
its size. A result the proxy builds itself follows the revision the request
names (``resultType`` from 2026-07-28 on).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from ..adapters._mcpstructured import raw_strings
from ._contracts import (
    PROXY_ERROR,
    ClientEnds,
    Hooks,
    ToolNameConflict,
    Upstream,
    dumps,
    guarded,
    print_error,
)
from ._heap import handling
from ._io import FdWriter, LineReader, WriterClosed
from ._listfirst import HOLD_SECONDS, ListFirst
from ._long import WINDOW
from ._owntool import OwnTool
from ._pending import Pending, PendingTable
from ._revision import for_revision, text_result, wants_result_type
from ._scan import SCAN_FROM, NotJson, parse_line
from ._unread import UnreadMessages

__all__ = ["Relay"]

log = logging.getLogger("toolcap.proxy")

# Seconds between looks at whether the client has gone while a write to the upstream
# is stuck (a server that stopped reading): the thread reading the client is stuck.
GONE_CHECK = 1.0


class Relay:
    """Relays one client connection to one upstream until either side ends."""

    def __init__(self, upstream: Upstream, hooks: Hooks, *, stdin_fd: int = 0,
                 stdout_fd: int = 1, client: ClientEnds | None = None):
        self._upstream = upstream
        self._hooks = hooks
        self._client_in, self._client_out = client or (LineReader(stdin_fd), FdWriter(stdout_fd))
        self._pending = PendingTable()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ended_by: str | None = None  # "client", "upstream" or "conflict"
        self._initialized = False
        # Listings of the relay's own before calls of tools no listing has shown.
        self._list_first = ListFirst(self._send_now,
                                     lambda result, first: hooks.tools_list(result, first))
        self._own = OwnTool(hooks, self._pending, self._reply, self._to_upstream)
        # Tool results in the upstream line being handled (one reader thread), for diagnostics.
        self._results_in_line: list[tuple[str, Any]] = []
        self._unread = UnreadMessages(hooks, self._pending, self._reply, self._reply_error,
                                      self._to_client, self._list_first.unread)
        self.exit_message: str | None = None

    # -- lifecycle ---------------------------------------------------------

    def run(self) -> int:
        """Relay until the client or the upstream goes away; return the exit code."""
        self._upstream.run(
            guarded(self._from_upstream),
            lambda: self._end("upstream"),
            guarded(self._unread.long_line),
        )
        threading.Thread(target=self._client_loop, name="toolcap-client-read", daemon=True).start()
        try:
            while not self._done.wait(GONE_CHECK):
                if self._upstream.send_waited() >= GONE_CHECK and self._client_out.gone():
                    self._end("client")  # stopping the upstream ends the stuck write
        except KeyboardInterrupt:
            self._end("client")
        return self._finish()

    def stop(self) -> None:
        """End the relay as if the client had gone (used on SIGTERM)."""
        self._end("client")

    def _end(self, by: str) -> None:
        with self._lock:
            if self._ended_by is None:
                self._ended_by = by
        self._done.set()

    def _finish(self) -> int:
        by = self._ended_by
        self._list_first.close()
        self._own.close()
        if by == "upstream":
            # Its stdout ended: reap it (or stop it, if it only closed stdout) for its status.
            self._upstream.stop(grace=1.0)
            code = self._upstream.returncode
            why = f"the upstream server {self._upstream.ended}"
            if not self._initialized:
                why += " before it answered initialize"
            if code is not None:
                why += f" (exit code {code})"
            self._unread.never_answered(why)
            self.exit_message = f"toolcap proxy: {why}"
            return 1
        if by == "conflict":
            self._upstream.stop()
            return 2
        # The client went away: the upstream must not outlive us.
        self._upstream.stop()
        return 0

    # -- client -> upstream ------------------------------------------------

    def from_client(self, line: bytes) -> None:
        """Take one client message line, on the caller's thread (no reading thread)."""
        if line and not line.isspace():
            guarded(self._from_client)(line)

    def _client_loop(self) -> None:
        try:
            while (line := self._client_in.readline()) is not None:
                self.from_client(line)
                self._list_first.wait_for_room()
            self._list_first.drain(2 * HOLD_SECONDS)  # what it sent before it went goes on
        finally:
            self._end("client")

    def _from_client(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None  # not ours to judge: the upstream answers it
        if isinstance(message, list):
            # A JSON-RPC batch (older protocol revisions): what the proxy answers
            # itself leaves the batch; the rest goes on.
            rest = [
                item
                for item in message
                if not (isinstance(item, dict) and self._note_client_message(item))
            ]
            if len(rest) != len(message):
                if rest:
                    self._to_upstream(dumps(rest), rest)
                return
        elif isinstance(message, dict) and self._note_client_message(message):
            return
        self._to_upstream(line, message)

    def _note_client_message(self, message: dict[str, Any]) -> bool:
        """Record what must be intercepted on the way back; True if answered here."""
        method = message.get("method")
        if not isinstance(method, str):
            return False
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/cancelled":
                self._pending.cancel(params.get("requestId"))
            return False
        call_id = message["id"]
        typed = wants_result_type(params)
        if self._own.take(method, message, params, typed):
            return True
        if method == "tools/call":
            name = params.get("name")
            self._pending.track(call_id, Pending("tools/call", str(name), typed))
            if isinstance(name, str) and self._own.upstream_has_tools and (
                    not self._hooks.listed_tool(name)):
                # Its output schema (a --url server's Mcp-Param marks) is not known yet.
                self._list_first.before_call(name, params.get("_meta"))
        elif method == "tools/list":
            first_page = params.get("cursor") is None
            self._pending.track(call_id, Pending("tools/list", "", typed, first_page))
        elif method == "resources/read":
            uri = str(params.get("uri", ""))
            self._pending.track(call_id, Pending("resources/read", uri, typed))
        elif method == "prompts/get":
            self._pending.track(call_id, Pending("prompts/get", str(params.get("name", "")), typed))
        elif method == "initialize":
            self._pending.track(call_id, Pending("initialize"))
        return False

    def _to_upstream(self, line: bytes, message: Any = None) -> None:
        if not self._list_first.hold(line, message):
            self._send_now(line)

    def _send_now(self, line: bytes) -> None:
        try:
            self._upstream.send(line)
        except WriterClosed:
            self._end("upstream")

    # -- upstream -> client ------------------------------------------------

    def _from_upstream(self, holder: list[bytes | bytearray]) -> None:
        with handling(big=len(holder[0]) >= SCAN_FROM):
            self._take_upstream_line(holder)

    def _take_upstream_line(self, holder: list[bytes | bytearray]) -> None:
        size = len(holder[0])
        windows = (bytes(holder[0][:WINDOW]), bytes(holder[0][-WINDOW:]))
        try:
            message, line, raw = parse_line(holder)
        except NotJson as exc:
            log.error("ignored a malformed message from the upstream server (%d bytes): %s",
                      size, exc)
            self._unread.malformed(windows, size)
            return
        with raw_strings(raw):
            out = self._intercepted(message, size)
        raw = None  # the views go: the line may now be let go
        if out is None:
            return
        data = (bytes(line) if isinstance(line, bytearray) else line) if (
            out is message and line is not None) else dumps(out)
        for tool, call_id in self._results_in_line:
            self._hooks.written(tool, call_id, data, changed=data is not line)
        self._results_in_line.clear()
        self._to_client(data)

    def _intercepted(self, message: Any, size: int) -> Any:
        """The message (or batch) to send on: ``message`` itself when unchanged, or
        None to send nothing."""
        out: Any
        if isinstance(message, dict):
            out = self._intercept(message, size)
        elif isinstance(message, list):
            changed = False
            items: list[Any] = []
            for item in message:
                new = self._intercept(item, size) if isinstance(item, dict) else item
                if new is None:
                    changed = True  # a dropped response (cancelled)
                    continue
                changed = changed or new is not item
                items.append(new)
            out = (items if items else None) if changed else message
        else:
            out = message
        return out

    def _intercept(self, message: dict[str, Any], size: int) -> dict[str, Any] | None:
        """The message to send on (the same object when unchanged), or None to drop it."""
        if "method" in message or "id" not in message:
            if message.get("method") == "notifications/tools/list_changed":
                self._list_first.changed()
            return message
        # Any answer means the upstream is up (the 2026 protocol has no initialize).
        self._initialized = True
        if self._list_first.is_own(message["id"]):
            try:  # a page of a listing of the relay's own: learnt from, sent to no one
                self._list_first.answered(message["id"], message, size)
            except ToolNameConflict as exc:
                self.exit_message = f"toolcap proxy: {exc}"
                self._end("conflict")
            return None
        entry = self._pending.take(message["id"])
        if entry is None:
            return message
        if entry.cancelled:
            return None  # the client has given up on it and must not see a response
        result = message.get("result")
        if not isinstance(result, dict):
            return self._hooks.error_answer(message, size)
        try:
            new_result = self._rewrite(entry, message["id"], result, size)
        except ToolNameConflict as exc:
            self.exit_message = f"toolcap proxy: {exc}"
            self._reply_error(message["id"], str(exc))
            self._end("conflict")
            return None
        except Exception as exc:
            # A failure of ours must neither pass an unbounded result through
            # nor take the relay down: this one answer becomes an error.
            log.exception("could not bound the result of %s", entry.method)
            print_error(f"toolcap proxy: could not bound a {entry.method} result: {exc!r}")
            text = f"toolcap proxy: could not bound this result ({type(exc).__name__})."
            if entry.method == "tools/call":
                new_result = for_revision(text_result(text, is_error=True), entry.result_type)
            else:
                error = {"code": PROXY_ERROR, "message": text}
                return {"jsonrpc": "2.0", "id": message["id"], "error": error}
        if new_result is None or new_result is result:
            return message
        return {**message, "result": new_result}

    def _rewrite(
        self, entry: Pending, call_id: Any, result: dict[str, Any], size: int
    ) -> dict[str, Any] | None:
        """The new result of an intercepted response, or None to leave it as it is."""
        bound = {"tools/call": self._hooks.tool_result, "resources/read":
                 self._hooks.resource_result, "prompts/get": self._hooks.prompt_result}
        if entry.method in bound:
            tool = entry.name if entry.method == "tools/call" else None  # else named later
            if tool is not None:
                self._results_in_line.append((tool, call_id))
            # A line within every limit holds a result within them: no work to do.
            return None if self._hooks.fits(tool, size) else bound[entry.method](
                entry.name, call_id, result)
        if entry.method == "tools/list":
            if not isinstance(result.get("nextCursor"), str):
                self._list_first.listed()  # the last page: the tools are known
            return self._hooks.tools_list(result, entry.first_page)
        if entry.method == "initialize":
            return self._own.initialize_result(result)
        return None

    # -- writing to the client ----------------------------------------------

    def _to_client(self, data: bytes) -> None:
        try:
            self._client_out.write_line(data)
        except WriterClosed:
            self._end("client")

    def _reply(self, call_id: Any, result: dict[str, Any], result_type: bool) -> None:
        result = for_revision(result, result_type)
        self._to_client(dumps({"jsonrpc": "2.0", "id": call_id, "result": result}))

    def _reply_error(self, call_id: Any, text: str) -> None:
        error = {"code": PROXY_ERROR, "message": self._hooks.error_text(text)}
        self._to_client(dumps({"jsonrpc": "2.0", "id": call_id, "error": error}))
