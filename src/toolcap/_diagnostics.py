"""Privacy-safe boundary diagnostics: where a payload grew or changed, never what it held.

Off unless the environment variable ``TOOLCAP_DEBUG_LOG`` names a file. The
variable is read at every call, so it can be set or cleared while a process
runs; when it is unset a call costs one environment lookup and nothing else.

When it is set, :func:`observe` appends one JSON line for each boundary where a
representation was changed or is over the wire budget. A line holds the stage,
the representation, its length in code points, UTF-8 bytes and JSON bytes,
whether it changed, the artifact state (``undecided``, ``none`` or ``stored``
with a count) and HMAC-SHA-256 digests of the value, the tool name and the call
id. The HMAC key is drawn at random once per process (again in a forked child),
so digests can be compared within one process only, and ``key_id`` (a digest of
a fixed label) tells which lines share a key. Content, paths, artifact
references and identifiers are never written in clear.

The ``spill`` stage (a hand-over to the artifact store) is always recorded.
``toolcap cap`` and ``toolcap run`` record their cut (``size_threshold`` or
``batch_ceiling``, representation ``stream_text``) and their spill (``stream``,
measured by its length: a stream is never held whole).

At most 50 lines are written per minute by each process; the next line written
after a suppression carries ``suppressed``, the number of events dropped
meanwhile. Across processes the bound is the file's size: nothing is appended
once it holds :data:`MAX_LOG_BYTES`. The file is opened without following a
symbolic link, must be a regular file owned by the user, and is made owner-only
(0600) if it was not; anything else is not written to. Whatever goes wrong
inside (an unwritable path, a full disk, a bad argument), the error is
swallowed: diagnostics never raise and never change a result.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable
from typing import Any

from .core._jsonsize import measure as _text_size

__all__ = ["ENV_VAR", "STAGES", "BoundaryLog", "observe"]

#: The environment variable naming the log file.
ENV_VAR = "TOOLCAP_DEBUG_LOG"

#: The boundaries a payload crosses, in order.
STAGES = (
    "received",  # tool output as it arrived
    "size_threshold",  # after the per-tool cap
    "spill",  # what was handed to the artifact store
    "batch_ceiling",  # after the batch ceiling
    "wire_projection",  # after the JSON-byte projection for transport
    "written",  # the bytes actually written out
)

#: Events written per window, and the window in seconds.
RATE_LIMIT = 50
RATE_WINDOW = 60.0
#: The log file is not appended to past this size, whatever the number of writers.
MAX_LOG_BYTES = 16 * 1024 * 1024
# A hand-over to the store is an event whether or not the text changed.
_ALWAYS_RECORDED = frozenset({"spill"})

# Stage and representation names are written as given, so they are held to a
# short vocabulary-like shape: a name that could carry content is replaced.
_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,39}\Z")


def _frame(label: bytes, data: bytes) -> bytes:
    # Length-delimited, so that no two different (label, data) inputs collide
    # by concatenation.
    return len(label).to_bytes(8, "big") + label + len(data).to_bytes(8, "big") + data


def _artifact_state(artifacts: tuple[str, ...] | None) -> tuple[str, int]:
    if artifacts is None:
        return "undecided", 0
    if not artifacts:
        return "none", 0
    return "stored", len(artifacts)


class BoundaryLog:
    """Writes diagnostic events to one file, rate-limited, under one HMAC key.

    ``path`` is the file to append to; ``None`` means the file named by
    ``TOOLCAP_DEBUG_LOG`` at each call (nothing when it is unset). ``clock`` is
    a monotonic clock in seconds (injectable for tests). The module-level
    :func:`observe` uses one shared instance.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        limit: int = RATE_LIMIT,
        window: float = RATE_WINDOW,
    ) -> None:
        self._path = os.fspath(path) if path is not None else None
        self._clock = clock
        self._limit = limit
        self._window = window
        self._lock = threading.Lock()
        self._recent: collections.deque[float] = collections.deque()
        self._suppressed = 0
        self._key = secrets.token_bytes(32)

    def rekey(self) -> None:
        """Start afresh with a new random key, as a forked child must.

        Digests stay comparable within one process only, and a lock held by
        another thread of the parent at fork time is replaced rather than waited on.
        """
        self._lock = threading.Lock()
        self._recent.clear()
        self._suppressed = 0
        self._key = secrets.token_bytes(32)

    def digest(self, label: str, data: str | bytes) -> str:
        """HMAC-SHA-256 of ``data`` under this log's key, domain-separated by ``label``."""
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, _frame(label.encode(), raw), hashlib.sha256).hexdigest()

    def observe(
        self,
        stage: str,
        representation: str,
        value: str | bytes | None,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        artifacts: tuple[str, ...] | None = None,
        changed: bool,
        wire_budget: int | None = None,
        size: int | None = None,
    ) -> None:
        """Record one boundary crossing if it changed or is over ``wire_budget``.

        A ``str`` value is a text representation: its JSON bytes are those of
        its serialization as a JSON string. A ``bytes`` value is taken as
        already serialized (a frame as written): its JSON bytes are its length.
        ``size`` stands for the byte length of a value that is not held (``None``).
        Never raises.
        """
        try:
            path = self._path if self._path is not None else os.environ.get(ENV_VAR)
            if not path:
                return
            self._observe(path, stage, representation, value, tool, call_id, artifacts,
                          changed, wire_budget, size)
        except Exception:  # diagnostics must never disturb the caller
            return

    def _observe(
        self,
        path: str,
        stage: str,
        representation: str,
        value: str | bytes | None,
        tool: str | None,
        call_id: str | None,
        artifacts: tuple[str, ...] | None,
        changed: bool,
        wire_budget: int | None,
        size: int | None,
    ) -> None:
        always = stage in _ALWAYS_RECORDED
        if not changed and wire_budget is None and not always:
            return  # nothing to report, and no need to measure
        chars, utf8, json_bytes = _measure(value) if value is not None or size is None else (
            None, size, size)
        over = wire_budget is not None and json_bytes is not None and json_bytes > wire_budget
        if not (changed or over or always):
            return
        state, count = _artifact_state(artifacts)
        event: dict[str, Any] = {
            "event": "toolcap.boundary",
            "time": round(time.time(), 3),
            "key_id": self.digest("key-id", b"")[:16],
            "stage": stage if _NAME.match(stage) else "invalid",
            "representation": representation if _NAME.match(representation) else "invalid",
            "chars": chars,
            "utf8_bytes": utf8,
            "json_bytes": json_bytes,
            "changed": bool(changed),
            "wire_budget": wire_budget,
            "over_wire_budget": over,
            "artifacts": state,
            "artifact_count": count,
            "value_hmac": None if value is None else self.digest("value", value),
            "tool_hmac": None if tool is None else self.digest("tool", tool),
            "call_hmac": None if call_id is None else self.digest("call", call_id),
        }
        with self._lock:
            now = self._clock()
            while self._recent and now - self._recent[0] >= self._window:
                self._recent.popleft()
            if len(self._recent) >= self._limit:
                self._suppressed += 1
                return
            self._recent.append(now)
            if self._suppressed:
                event["suppressed"] = self._suppressed
            line = json.dumps(event, separators=(",", ":"), allow_nan=False) + "\n"
            if not self._write(path, line.encode("ascii")):
                self._suppressed += 1  # full or refused: reported if a later line gets out
                return
            # Counted as reported only once the line is out.
            self._suppressed = 0

    @staticmethod
    def _write(path: str, data: bytes) -> bool:
        """Append ``data``; ``False`` when the file is refused or full."""
        # One write on an O_APPEND descriptor: lines from several processes do not
        # interleave. Never through a symlink (it could point at any file of the
        # user's); owner-only, as digests are still about the user's data.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
                return False
            if status.st_mode & 0o077:
                os.fchmod(fd, 0o600)  # an existing loose file is tightened, or not written
            if status.st_size + len(data) > MAX_LOG_BYTES:
                return False
            os.write(fd, data)
            return True
        finally:
            os.close(fd)


def _measure(value: str | bytes | None) -> tuple[int | None, int, int]:
    if value is None:
        return 0, 0, 0
    if isinstance(value, bytes):
        return len(value.decode("utf-8", "replace")), len(value), len(value)
    size = _text_size(value)
    return len(value), size.utf8, size.json + 2  # the quotes


_DEFAULT = BoundaryLog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_DEFAULT.rekey)


def observe(
    stage: str,
    representation: str,
    value: str | bytes | None,
    *,
    tool: str | None = None,
    call_id: str | None = None,
    artifacts: tuple[str, ...] | None = None,
    changed: bool,
    wire_budget: int | None = None,
    size: int | None = None,
) -> None:
    """Record a boundary crossing in the ``TOOLCAP_DEBUG_LOG`` file, if it is set.

    ``stage`` is one of :data:`STAGES`; ``representation`` names the form the
    value takes there (``model_text``, ``content``, ``frame`` …); ``artifacts``
    is the response's tri-state record. A line is written only when ``changed``
    is true or the value's JSON bytes exceed ``wire_budget`` (and always for
    ``spill``). ``size`` is the length of a value that is not held. Never raises.
    """
    if ENV_VAR not in os.environ:  # the disabled path: one lookup
        return
    _DEFAULT.observe(
        stage,
        representation,
        value,
        tool=tool,
        call_id=call_id,
        artifacts=artifacts,
        changed=changed,
        wire_budget=wire_budget,
        size=size,
    )
