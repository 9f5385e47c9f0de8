"""The upstream MCP server: a subprocess spoken to over stdio.

Its stderr is a pipe of its own, relayed line by line to the proxy's stderr
(:mod:`toolcap.proxy._stderr`): a server that makes its stderr non-blocking
(Node.js does) cannot make the proxy's writes fail. It runs in a process group
of its own, and stopping it ends that whole group, so a wrapper (``sh -c``,
``npx``, ``uvx``) cannot leave the server or anything else behind; if the proxy
dies without a chance to clean up, the group is ended too (:mod:`toolcap._children`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from .._children import GroupGuard, end_group
from .._pipes import widen_pipe
from ..core._errors import UpstreamStartError
from ._contracts import OnLine, OnLongLine
from ._io import FdWriter, LineReader
from ._stderr import StderrPump

__all__ = ["StdioUpstream", "UpstreamStartError"]

# How long an exited upstream's stdout may stay open (a grandchild holding the
# pipe) before the relay stops waiting for its last messages.
_EOF_GRACE = 1.0

#: The upstream's stdout pipe is made this large (Linux, where allowed), and a line
#: that spans reads is read by as much: a 21 MB result line then comes in about 21
#: reads rather than 330 of the default 64 KB, each a wake-up of the proxy and of
#: the server blocked on the full pipe.
UPSTREAM_PIPE = 1 << 20


class StdioUpstream:
    """An upstream server process with newline-delimited JSON on its stdin/stdout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: StderrPump | None = None,
        max_line: int | None = None,
        wide_stdout: bool = True,
    ) -> None:
        """``wide_stdout``: its stdout a 1 MB pipe (a big result in few reads); off
        where many run at once (``--listen``), as each takes from the user's budget of
        pipe memory, past which every new pipe of the user is small."""
        if not argv:
            raise UpstreamStartError("toolcap proxy: no upstream command given after --", 2)
        self.argv = list(argv)
        self._env = env
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._writer: FdWriter | None = None
        self._reader_done = threading.Event()
        self._closed_once = threading.Lock()
        self._closed_called = False
        self._stderr = stderr
        self._max_line = max_line
        self._wide_stdout = wide_stdout
        self._guard: GroupGuard | None = None

    @property
    def pid(self) -> int | None:
        """The upstream process id, once started."""
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        """The exit status, once the process has exited."""
        return self._proc.poll() if self._proc else None

    @property
    def ended(self) -> str:
        """How its end reads in a message."""
        return "exited"

    def describe(self) -> str:
        """A short name of the upstream for messages."""
        return os.path.basename(self.argv[0])

    def start(self) -> None:
        """Spawn the process. Raises UpstreamStartError with a one-line message."""
        name = self.argv[0]
        guard = GroupGuard()
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None if self._stderr is None else subprocess.PIPE,
                bufsize=0,
                env=self._env,
                cwd=self._cwd,
                close_fds=True,
                preexec_fn=guard.child_setup(own_group=True),
            )
        except OSError as exc:
            guard.disarm()
            if isinstance(exc, FileNotFoundError):
                why, code = f": command not found: {name}", 127
            elif isinstance(exc, PermissionError):
                why, code = f": permission denied: {name}", 126
            else:
                why, code = f" {name}: {exc.strerror or exc}", 126
            raise UpstreamStartError(
                f"toolcap proxy: cannot start the upstream server{why}", code
            ) from None
        self._guard = guard
        assert self._proc.stdout is not None
        if self._wide_stdout:
            widen_pipe(self._proc.stdout.fileno(), UPSTREAM_PIPE)
        if self._stderr is not None and self._proc.stderr is not None:
            self._stderr.relay(os.dup(self._proc.stderr.fileno()))
            self._proc.stderr.close()
        assert self._proc.stdin is not None
        # The writer owns a descriptor of its own: closing the one the Popen's
        # file object also owns would close it twice, and the second close can
        # hit a number reused meanwhile by another session's pipe.
        self._writer = FdWriter(os.dup(self._proc.stdin.fileno()), cancelable=True)
        self._proc.stdin.close()

    def run(
        self,
        on_line: OnLine,
        on_closed: Callable[[], None],
        on_long_line: OnLongLine | None = None,
    ) -> None:
        """Start the threads that deliver each stdout line and report the end."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        reader = LineReader(
            proc.stdout.fileno(), UPSTREAM_PIPE, max_line=self._max_line,
            on_long_line=on_long_line,
        )

        def closed() -> None:
            with self._closed_once:
                if self._closed_called:
                    return
                self._closed_called = True
            on_closed()

        def read_loop() -> None:
            try:
                while (line := reader.read_line()) is not None:
                    if line and not line.isspace():
                        holder = [line]
                        del line  # the handler holds the only reference: it may let go
                        on_line(holder)
            finally:
                self._reader_done.set()
                closed()

        def wait_loop() -> None:
            proc.wait()
            # Let the reader relay what the process wrote before it exited.
            self._reader_done.wait(_EOF_GRACE)
            closed()

        threading.Thread(target=read_loop, name="toolcap-upstream-read", daemon=True).start()
        threading.Thread(target=wait_loop, name="toolcap-upstream-wait", daemon=True).start()

    def send(self, line: bytes) -> None:
        """Write one message line. Raises WriterClosed if the upstream is gone."""
        assert self._writer is not None
        self._writer.write_line(line)

    def send_waited(self) -> float:
        """Seconds the line being sent has waited for the server to read (0: none)."""
        since = self._writer.waiting_since if self._writer is not None else None
        return 0.0 if since is None else time.monotonic() - since

    def ready_to_send(self, size: int) -> contextlib.AbstractContextManager[bool]:
        """Whether a line of ``size`` bytes can be sent now without waiting on the
        server to read: a message sent within the block never blocks the caller
        (see :meth:`FdWriter.held_if_ready`)."""
        if self._writer is None:
            return contextlib.nullcontext(False)
        return self._writer.held_if_ready(size)

    def stop(self, grace: float = 2.0) -> None:
        """Close stdin and give the process ``grace`` seconds to exit; then end its
        whole process group (SIGTERM, SIGKILL ``grace`` seconds later)."""
        proc = self._proc
        if proc is None:
            return
        if self._writer is not None:
            self._writer.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
        # Whether or not the server exited, what it started may still run.
        end_group(proc.pid, grace)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
        if self._guard is not None:
            self._guard.disarm()
            self._guard = None
