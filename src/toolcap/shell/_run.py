"""Run a command the way an agent's shell tool does, and hand its output over as it comes.

stdout and stderr share one pipe, so their bytes arrive in the order the command
wrote them. The command runs in a process group of its own: a timeout kills the
whole group (children included), and the signals toolcap receives (Ctrl-C, a
terminate request) are passed on to that group. If toolcap itself dies first
(even by SIGKILL), the group is ended too (:mod:`toolcap._children`); what the
command leaves running in the background after it exits is left alone.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType

from .._children import GroupGuard
from .._pipes import widen_pipe
from ..core._errors import CommandNotStarted

__all__ = ["DRAIN_SECONDS", "KILL_GRACE_SECONDS", "CommandNotStarted", "Exit", "run_command"]

#: After the command exits, how long output still held open by a process it left
#: running in the background is waited for. Output already in the pipe is never lost.
DRAIN_SECONDS = 1.0
#: After a timeout, how long the group has to exit on SIGTERM before SIGKILL.
KILL_GRACE_SECONDS = 2.0
#: Without pidfd support, how often the command's exit is checked.
_POLL_SECONDS = 0.05
_READ = 1 << 20  # as `toolcap cap` reads standard input (cli._cap.CHUNK)
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class Exit:
    """How a command ended.

    Attributes:
        returncode: as :mod:`subprocess` reports it (negative: killed by that signal).
        timed_out: the timeout expired and the process group was killed.
        timeout: the timeout in seconds, if one was set.
        forwarded: the signals passed on to the command, in order.
    """

    returncode: int
    timed_out: bool = False
    timeout: float | None = None
    forwarded: tuple[int, ...] = ()

    @property
    def signal(self) -> int | None:
        """The signal that killed the command, if one did."""
        return -self.returncode if self.returncode < 0 else None

    @property
    def status(self) -> int:
        """The exit code to pass on: the command's, 128+N for signal N.

        After a timeout it is never 0 (124, as ``timeout(1)`` says, if the command
        exited cleanly on the signal), so a script cannot take it for success.
        """
        if self.returncode < 0:
            return 128 - self.returncode
        if self.timed_out and self.returncode == 0:
            return 124
        return self.returncode

    def line(self) -> str:
        """The last line of the output: how the command ended."""
        parts = []
        if self.timed_out:
            parts.append(f"timed out after {_seconds(self.timeout)}, process group killed")
        elif self.forwarded:
            # Each signal once, however often it came: the line must fit its reserve.
            names = ", ".join(_name(s) for s in dict.fromkeys(self.forwarded))
            parts.append(f"interrupted ({names} forwarded)")
        if self.signal is not None:
            parts.append(f"killed by signal {_name(self.signal)} ({self.signal})")
        parts.append(f"exit status {self.status}")
        return "[" + "; ".join(parts) + "]"


def _name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:g}s"


def run_command(
    argv: Sequence[str],
    on_output: Callable[[bytes], None],
    *,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> Exit:
    """Run ``argv``, hand each chunk of its merged stdout and stderr to ``on_output``.

    Returns when the command has exited and its output is read (see
    :data:`DRAIN_SECONDS`). Raises :class:`CommandNotStarted` if it cannot start.
    """
    forwarded: list[int] = []
    group: list[int] = []  # the command's process group, once it exists

    def forward(signum: int, frame: FrameType | None) -> None:
        forwarded.append(signum)
        if group:
            _kill_group(group[0], signum)

    reader, writer = os.pipe()
    widen_pipe(reader, _READ)
    guard = GroupGuard()  # ends the group if toolcap is killed before the command ends
    try:
        with _forwarding(forward):
            try:
                process = subprocess.Popen(
                    list(argv), stdout=writer, stderr=writer, start_new_session=True,
                    env=env, cwd=cwd, preexec_fn=guard.child_setup(own_group=False),
                )
            except OSError as error:
                raise CommandNotStarted(
                    error.errno, f"cannot run {argv[0]!r}: {error.strerror or error}"
                ) from None
            group.append(process.pid)
            for signum in forwarded:  # arrived while it was starting
                _kill_group(process.pid, signum)
            os.close(writer)
            writer = -1
            try:
                timed_out = _pump(process, reader, on_output, timeout)
            except BaseException:
                # We are going away (a broken output pipe, an error): take it with us.
                _kill_group(process.pid, signal.SIGKILL)
                process.wait()
                raise
            return Exit(process.returncode, timed_out, timeout, tuple(forwarded))
    finally:
        # What the command left running in the background once it exited is its own.
        guard.disarm()
        os.close(reader)
        if writer >= 0:
            os.close(writer)


def _pump(
    process: subprocess.Popen[bytes],
    reader: int,
    on_output: Callable[[bytes], None],
    timeout: float | None,
) -> bool:
    """Read until the command has exited and its pipe is done; return whether it timed out."""
    deadline = None if timeout is None else time.monotonic() + timeout
    kill_at: float | None = None  # when SIGKILL follows SIGTERM after a timeout
    drain_until: float | None = None  # set once the command has exited
    timed_out = eof = False
    with _exit_watch(process.pid) as exit_fd, selectors.DefaultSelector() as selector:
        selector.register(reader, selectors.EVENT_READ, "output")
        if exit_fd is not None:
            selector.register(exit_fd, selectors.EVENT_READ, "exit")
        while True:
            now = time.monotonic()
            if drain_until is None and process.poll() is not None:
                if timed_out:
                    _kill_group(process.pid, signal.SIGKILL)  # whatever ignored SIGTERM
                drain_until = now + DRAIN_SECONDS
                kill_at = None
                if exit_fd is not None:
                    selector.unregister(exit_fd)  # it stays readable from now on
            if drain_until is not None and (eof or now >= drain_until):
                # Done; or something it left running holds the pipe open: stop waiting.
                return timed_out
            if drain_until is None:
                if deadline is not None and not timed_out and now >= deadline:
                    timed_out = True
                    _kill_group(process.pid, signal.SIGTERM)
                    kill_at = now + KILL_GRACE_SECONDS
                elif kill_at is not None and now >= kill_at:
                    _kill_group(process.pid, signal.SIGKILL)
                    kill_at = None
            running = drain_until is None
            wait = _next_wait(
                now,
                deadline if running and not timed_out else None,
                kill_at,
                drain_until,
                poll=running and exit_fd is None,
            )
            for key, _ in selector.select(wait):
                if key.data == "output":
                    chunk = os.read(reader, _READ)
                    if chunk:
                        on_output(chunk)
                    else:
                        eof = True
                        selector.unregister(reader)


def _next_wait(now: float, *moments: float | None, poll: bool) -> float | None:
    times = [moment - now for moment in moments if moment is not None]
    if poll:
        times.append(_POLL_SECONDS)
    return max(0.0, min(times)) if times else None


def _kill_group(pgid: int, signum: int) -> None:
    # The group may be gone already; that is what we wanted.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


@contextlib.contextmanager
def _exit_watch(pid: int) -> Iterator[int | None]:
    """A descriptor that becomes readable when ``pid`` exits (Linux pidfd), else ``None``."""
    opener = getattr(os, "pidfd_open", None)
    fd = None
    if opener is not None:
        with contextlib.suppress(OSError):
            fd = opener(pid)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def _forwarding(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """Pass Ctrl-C and terminate requests on to the command while it runs."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set in the main thread
        return
    previous = {}
    for signum in _FORWARDED:
        with contextlib.suppress(OSError, ValueError):
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
