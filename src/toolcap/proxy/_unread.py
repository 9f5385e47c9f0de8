"""Upstream messages the relay does not read: a line over ``max_line_size``, a malformed
one, and those that never came (the upstream ended).

None may leave a client waiting: the call such a message answered (found by
the id at its ends, or anywhere in its first and last bytes when it is not
JSON) gets a note instead of its result, and the client's log and stderr say
what happened. A long line is streamed to the store as it is read, never held
(:func:`~toolcap.proxy._long.keep_long_line`), and its note names the artifact.
Once the upstream has ended, every request still waiting gets an error saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ._contracts import Hooks, dumps, print_error
from ._long import LongMessage, ids_anywhere, keep_long_line, response_ids
from ._pending import PendingTable
from ._revision import text_result

__all__ = ["UnreadMessages"]


class UnreadMessages:
    """Answers the calls whose responses the relay could not read, or never got."""

    def __init__(
        self,
        hooks: Hooks,
        pending: PendingTable,
        reply: Callable[[Any, dict[str, Any], bool], None],
        reply_error: Callable[[Any, str], None],
        to_client: Callable[[bytes], None],
        own_unread: Callable[[Any, str], bool] = lambda request_id, why: False,
    ) -> None:
        self._hooks = hooks
        self._pending = pending
        self._reply = reply
        self._reply_error = reply_error
        self._to_client = to_client
        # Tells a request of the relay's own (a listing) that its answer went unread.
        self._own_unread = own_unread

    def long_line(self, long_line: LongMessage) -> None:
        """A message over ``max_line_size``: streamed to the store, never held; its call
        (found by the id at its start or end) gets a note naming the artifact. One cut
        short (its HTTP answer dropped) is left to its upstream, which fails its call
        or resumes its stream."""
        kept = keep_long_line(long_line, lambda: self._hooks.open_writer(None))
        if not kept.whole:
            return
        line = f"a message from the upstream server was {kept.what()}; {kept.kept()}"
        # Only an answer answers a call: a long request from the server whose id is a
        # waiting call's id (their ids are counted apart) must not take its place.
        ids = [one for one in response_ids(kept.head, kept.tail) if one is not None]
        self._answer(iter(ids), line,
                     kept.note(self._hooks.read_artifact_name), is_error=False)

    def malformed(self, windows: tuple[bytes, bytes], size: int) -> None:
        """A line that is not JSON: if it was the response to a call, that call is
        answered now rather than left waiting forever."""
        self._answer(
            ids_anywhere(windows),
            f"ignored a malformed message from the upstream server ({size} bytes)",
            "toolcap proxy: the upstream server sent a malformed response to this call.",
            is_error=True,
        )

    def never_answered(self, why: str) -> None:
        """The upstream has ended: every request still waiting is answered, saying ``why``."""
        for call_id, entry in self._pending.drain().items():
            if entry.cancelled:
                continue
            if entry.method == "tools/call":
                text = text_result(f"toolcap proxy: {why}; this call got no result.", is_error=True)
                self._reply(call_id, text, entry.result_type)
            else:
                self._reply_error(call_id, f"toolcap proxy: {why}; this request got no answer.")

    def _answer(self, ids: Iterator[Any], line: str, text: str, *, is_error: bool) -> None:
        """Say on stderr (and to the client's log) that a message was not read, and answer
        the call it answered (if an id in ``ids`` names one) with ``text``."""
        print_error(f"toolcap proxy: {line}")
        found = list(ids)
        if any(self._own_unread(one, line) for one in found):
            return  # the client asked for nothing: its log is not told
        params = {"level": "error", "logger": "toolcap", "data": f"toolcap proxy: {line}"}
        self._to_client(dumps({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": params}))
        entry, call_id = self._pending.take_first(found)
        if entry is None or entry.cancelled:
            return
        if entry.method != "tools/call":
            self._reply_error(call_id, text)
            return
        # A note for a tool with a known output schema is an error: it has no structure.
        typed = self._hooks.has_output_schema(entry.name)
        self._reply(call_id, text_result(text, is_error=is_error or typed), entry.result_type)
