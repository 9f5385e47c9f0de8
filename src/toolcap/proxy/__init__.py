"""``toolcap proxy``: an MCP server that bounds every result of another MCP server.

The proxy speaks MCP over its own stdin/stdout to a client and relays every
message to an upstream server (a command it starts, or a Streamable HTTP URL),
changing only what must change: tool and resource results are bounded by the
same finalization seam as the library, cut originals are kept in the artifact
store, and one tool (``read_artifact``) reads them back. ``docs/proxy.md``
says what a client sees.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from .._config import Config
from .._finalize import Policy
from ..store import LocalStore
from ._contracts import Upstream, print_error
from ._hooks import ProxyHooks
from ._listen import ServeOptions
from ._relay import Relay
from ._stderr import StderrPump
from ._upstream import StdioUpstream, UpstreamStartError

__all__ = ["run_proxy", "serve_proxy"]

#: At exit, how long the last artifacts may take to reach the disk.
_FLUSH_AT_EXIT_SECONDS = 10.0
#: At exit, how long stderr may take to accept the last lines before they are dropped.
_STDERR_DRAIN_SECONDS = 5.0


def run_proxy(
    command: Sequence[str] | None,
    config: Config,
    *,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
    read_artifact_name: str | None = "read_artifact",
    policy: Policy | None = None,
) -> int:
    """Serve MCP on stdin/stdout for the upstream ``command`` (or ``url``) until either ends.

    ``timeout`` (seconds) bounds connecting to ``url`` and each wait for its
    answer (default: 30 s to connect, 300 s between bytes of an answer).
    Returns the exit status: 0 when the client went away, non-zero when the
    upstream could not be started or died, with one line on stderr saying why.
    """
    policy = policy or Policy(config)
    # Open the artifact store now, in one thread: a store that cannot be opened
    # is reported once at start (the proxy still runs, bounding without keeping).
    _flush_off_the_reply_path(policy)
    hooks = ProxyHooks(
        policy, read_artifact_name=read_artifact_name, wire_budget=config.wire_budget
    )
    # Every write to stderr goes through one thread that copes with a
    # non-blocking descriptor; the upstream's stderr is relayed through it too.
    pump = StderrPump(2)
    saved = sys.stdout, sys.stderr
    sys.stderr = pump.text_stream()
    try:
        return _serve(command, hooks, url, headers, timeout, pump, config.max_line_size)
    finally:
        _wait_flushed(policy)
        sys.stderr.flush()
        pump.close(_STDERR_DRAIN_SECONDS)
        sys.stdout, sys.stderr = saved


def _serve(
    command: Sequence[str] | None,
    hooks: ProxyHooks,
    url: str | None,
    headers: dict[str, str] | None,
    timeout: float | None,
    pump: StderrPump,
    max_line: int | None,
) -> int:
    upstream: Upstream
    if url is not None:
        from ._http import HttpUpstream

        upstream = HttpUpstream(url, headers or {}, timeout, max_line)
    else:
        stdio = StdioUpstream(list(command or ()), stderr=pump, max_line=max_line)
        try:
            stdio.start()
        except UpstreamStartError as error:
            print_error(str(error))
            return error.exit_code
        upstream = stdio
    # Keep the protocol stream private: anything else in this process that
    # prints to stdout (a library, a warning) goes to stderr instead.
    wire_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    relay = Relay(upstream, hooks, stdin_fd=0, stdout_fd=wire_out)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        relay.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        code = relay.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if relay.exit_message:
        print_error(relay.exit_message)
    return code


def serve_proxy(
    command: Sequence[str] | None,
    config: Config,
    options: ServeOptions,
    *,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
    read_artifact_name: str | None = "read_artifact",
) -> int:
    """Serve MCP over Streamable HTTP (``--listen``), one relay per client session.

    Each session gets an upstream of its own: a process started from ``command``,
    or a session of its own with the server at ``url`` (``timeout`` as for
    :func:`run_proxy`). Returns the exit status.
    """
    from ._serve import serve_http

    policy = Policy(config)
    _flush_off_the_reply_path(policy)  # open the store once, at start, as run_proxy does

    def make_hooks() -> ProxyHooks:
        return ProxyHooks(
            policy, read_artifact_name=read_artifact_name, wire_budget=config.wire_budget
        )

    def make_upstream() -> Upstream:
        if url is not None:
            from ._http import HttpUpstream

            return HttpUpstream(url, headers or {}, timeout, config.max_line_size)
        stdio = StdioUpstream(list(command or ()), max_line=config.max_line_size,
                              wide_stdout=False)  # one a session: see StdioUpstream
        stdio.start()
        return stdio

    try:
        return serve_http(options, make_upstream, make_hooks)
    finally:
        _wait_flushed(policy)


def _flush_off_the_reply_path(policy: Policy) -> None:
    """Open the store; a local one flushes artifacts on a thread, not in the reply's wait.

    A reference the proxy sends then names an artifact that is complete and
    readable by any process on the machine; it is on the disk about 50 ms later
    (see :meth:`toolcap.store.LocalStore.flush_in_background`), and at exit.
    """
    sink = policy.sink
    if isinstance(sink, LocalStore):
        sink.flush_in_background()


def _wait_flushed(policy: Policy) -> None:
    sink = policy.sink
    if isinstance(sink, LocalStore) and not sink.wait_flushed(_FLUSH_AT_EXIT_SECONDS):
        print_error("toolcap proxy: artifacts written just now may not be on the disk yet")
