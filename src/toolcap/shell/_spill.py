"""Spill a stream to the artifact store while it is cut, per the configured policy.

:func:`open_stream` builds the :class:`~toolcap.shell._stream.CapStream` a command needs
from a :class:`~toolcap.Policy`: the tool's threshold, strategy and marker, the
batch ceiling, and a writer of the policy's store, which runs on a thread of its
own (:class:`BackgroundWriter`) so that hashing and disk writes overlap reading.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING

from ..core._default import DEFAULT, Default
from ..core._errors import StoreError
from ..core._sizes import Limit
from ..protocols import CountingStreamWriter, StreamingArtifactSink, takes_newlines
from ._capstream import CapStream, StreamWriter
from ._stream import StreamCutter

if TYPE_CHECKING:
    from .._finalize import Policy

__all__ = ["BackgroundWriter", "open_stream"]


class BackgroundWriter:
    """A :class:`StreamWriter` that writes on a thread of its own.

    Hashing and disk writes release the GIL, so the spill overlaps reading and
    cutting instead of adding to them. At most ``depth`` chunks wait in between,
    so memory stays bounded. A failure of the wrapped writer is raised by the next
    ``write`` or by ``commit``.
    """

    def __init__(self, writer: StreamWriter, *, depth: int = 8) -> None:
        self._writer = writer
        # The store's own writer takes the count of line breaks made by the reading
        # thread (which counts for keep_lines anyway): then the spill thread only
        # hashes and writes, which release the interpreter's lock.
        self._counted: CountingStreamWriter | None = (
            writer if takes_newlines(writer) else None)
        self._queue: queue.Queue[tuple[bytes, int | None] | None] = queue.Queue(depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="toolcap-spill", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None:
                chunk, newlines = item
                try:
                    if self._counted is not None:
                        self._counted.write(chunk, newlines)
                    else:
                        self._writer.write(chunk)
                except BaseException as error:  # handed to the reading thread
                    self._error = error

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    @property
    def wants_newlines(self) -> bool:
        """Whether :meth:`write` makes use of a count of the chunk's line breaks."""
        return self._counted is not None

    def write(self, chunk: bytes, newlines: int | None = None) -> None:
        """Queue ``chunk`` (an immutable ``bytes``: it is not copied), with its count of
        line breaks when the caller has it."""
        if self._error is not None:
            raise self._error
        self._queue.put((chunk, newlines))

    def commit(self) -> str:
        """Wait for the queued chunks, then commit."""
        self._stop()
        if self._error is not None:
            raise self._error
        return self._writer.commit()

    def abort(self) -> None:
        """Stop, and discard what was written."""
        self._stop()
        self._writer.abort()


def open_stream(
    policy: Policy,
    tool: str,
    *,
    threshold: Limit | Default = DEFAULT,
    ceiling: Limit | Default = DEFAULT,
    spill: bool = True,
    name_binary: bool = False,
) -> CapStream:
    """A :class:`CapStream` for ``tool`` under ``policy`` (its configuration and store).

    ``threshold`` and ``ceiling``: ``"default"`` (the default) takes the tool's
    ``size_threshold`` and the configured batch ceiling; ``None`` is no limit. The
    full stream is kept only if ``spill`` and the tool's own ``spill`` setting both
    allow it and the policy has a store. ``name_binary``: name a binary stream
    even with no limit at all (see :class:`StreamCutter`).
    """
    tool_policy = policy.for_tool(tool)
    cutter = StreamCutter(
        tool_policy.size_threshold if threshold == DEFAULT else threshold,
        ceiling=policy.config.batch_ceiling if ceiling == DEFAULT else ceiling,
        strategy=tool_policy.strategy,
        head_ratio=tool_policy.head_ratio,
        marker=tool_policy.marker,
        format=tool_policy.format,
        name_binary=name_binary,
        keep_lines=tool_policy.keep,
    )
    keep = spill and tool_policy.spill

    def open_writer() -> StreamWriter | None:
        sink = policy.sink
        if sink is None:
            return None  # a policy with no store: nothing to keep, nothing lost
        if not isinstance(sink, StreamingArtifactSink):
            # A store that takes only whole values: a stream is not buffered in memory
            # to feed it. (A store that could not be opened raises its reason here.)
            raise StoreError("the artifact store takes no streams")
        return BackgroundWriter(sink.open_writer(tool=tool))

    return CapStream(cutter, open_writer if keep else None, tool=tool)
