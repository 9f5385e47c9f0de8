"""The upstream MCP server: a subprocess spoken to over stdio.

Its stderr is inherited, so whatever it logs appears on the proxy's stderr.
It stays in the proxy's process group (a client that stops the proxy's group
stops it too) and, on Linux, is sent SIGTERM if the proxy dies without a
chance to clean up, so it is never orphaned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

from ._io import FdWriter, LineReader

__all__ = ["StdioUpstream", "UpstreamStartError"]

# How long an exited upstream's stdout may stay open (a grandchild holding the
# pipe) before the relay stops waiting for its last messages.
_EOF_GRACE = 1.0


class UpstreamStartError(Exception):
    """The upstream command could not be started; the message is one line."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Ask Linux to SIGTERM this child when the proxy thread that spawned it dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except Exception:
        pass


class StdioUpstream:
    """An upstream server process with newline-delimited JSON on its stdin/stdout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
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
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,
                bufsize=0,
                env=self._env,
                cwd=self._cwd,
                close_fds=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        except FileNotFoundError:
            raise UpstreamStartError(
                f"toolcap proxy: cannot start the upstream server: command not found: {name}", 127
            ) from None
        except PermissionError:
            raise UpstreamStartError(
                f"toolcap proxy: cannot start the upstream server: permission denied: {name}", 126
            ) from None
        except OSError as exc:
            raise UpstreamStartError(
                f"toolcap proxy: cannot start the upstream server {name}: {exc.strerror or exc}",
                126,
            ) from None
        assert self._proc.stdin is not None
        self._writer = FdWriter(self._proc.stdin.fileno())

    def run(self, on_line: Callable[[bytes], None], on_closed: Callable[[], None]) -> None:
        """Start the threads that deliver each stdout line and report the end."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        reader = LineReader(proc.stdout.fileno())

        def closed() -> None:
            with self._closed_once:
                if self._closed_called:
                    return
                self._closed_called = True
            on_closed()

        def read_loop() -> None:
            try:
                while (line := reader.readline()) is not None:
                    if line.strip():
                        on_line(line)
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

    def stop(self, grace: float = 2.0) -> None:
        """Close stdin, give the process ``grace`` seconds, then SIGTERM, then SIGKILL."""
        proc = self._proc
        if proc is None:
            return
        if self._writer is not None:
            self._writer.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
            try:
                proc.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
