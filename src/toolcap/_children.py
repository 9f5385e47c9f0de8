"""Child processes that never outlive toolcap: a group of their own, ended whole.

A command toolcap starts (``toolcap run``'s command, ``toolcap proxy``'s
upstream) runs in a process group of its own, so that a wrapper (``sh -c``,
``npx``, ``uvx``) and everything it starts can be signalled at once. Two things
make that group die with toolcap even when toolcap gets no chance to clean up
(SIGKILL, a crash):

* on Linux, the direct child gets SIGTERM when toolcap dies (a parent-death
  signal, ``prctl(PR_SET_PDEATHSIG)``);
* on every POSIX system, a watchdog process (:mod:`toolcap._watchdog`) holds the
  read end of a pipe only toolcap writes to; when the pipe ends while the group
  is armed, it sends the group SIGTERM, then SIGKILL. A wrapper that ignores
  SIGTERM, or a grandchild the parent-death signal never reaches, still dies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ._watchdog import GRACE, end_group, group_alive

__all__ = ["GRACE", "GroupGuard", "end_group", "group_alive"]

_WATCHDOG = Path(__file__).with_name("_watchdog.py")


class GroupGuard:
    """A watchdog that ends an armed process group if this process dies first.

    Start the child with ``preexec_fn=guard.child_setup(...)`` (it arms the
    watchdog from the child, before the command runs); ``disarm()`` when toolcap
    has ended the group itself or leaves it running on purpose. Best effort: where no watchdog
    can be started, the parent-death signal is what is left.
    """

    def __init__(self) -> None:
        self._pipe = -1
        self._process: subprocess.Popen[bytes] | None = None
        if os.name != "posix" or not sys.executable:
            return
        read_end, self._pipe = os.pipe()  # both ends close on exec: no child inherits them
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_WATCHDOG)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            os.close(self._pipe)
            self._pipe = -1
        finally:
            os.close(read_end)

    def child_setup(self, *, own_group: bool) -> Callable[[], None]:
        """A ``preexec_fn`` that puts the child in a process group of its own (if
        ``own_group``; else it must be a session leader already), arms the watchdog
        with that group before the command runs (so no moment is unguarded), and, on
        Linux, asks for SIGTERM to the child when toolcap dies.

        ``prctl`` is looked up here, in the parent, so that the child makes only a
        few system calls between fork and exec.
        """
        prctl: Callable[[int, int], int] | None = None
        if sys.platform == "linux":
            try:
                import ctypes

                prctl = ctypes.CDLL(None, use_errno=True).prctl
            except (OSError, AttributeError):
                prctl = None
        parent = os.getpid()
        pipe = self._pipe
        pr_set_pdeathsig = 1

        def setup() -> None:  # pragma: no cover - runs in the child
            if own_group:
                os.setpgid(0, 0)
            if pipe >= 0:  # still open here: close-on-exec closes it at exec
                with contextlib.suppress(OSError):
                    os.write(pipe, b"arm %d\n" % os.getpgid(0))
            if prctl is not None:
                prctl(pr_set_pdeathsig, signal.SIGTERM)
            if os.getppid() != parent:
                os._exit(1)  # toolcap died before the request took effect

        return setup

    def _send(self, line: str) -> None:
        if self._pipe >= 0:
            with contextlib.suppress(OSError):
                os.write(self._pipe, line.encode("ascii") + b"\n")

    def disarm(self) -> None:
        """Stop guarding and let the watchdog exit."""
        self._send("disarm")
        if self._pipe >= 0:
            os.close(self._pipe)
            self._pipe = -1
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(GRACE)
            self._process = None
