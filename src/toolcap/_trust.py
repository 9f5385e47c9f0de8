"""Configuration files as the user's own: read within bounds, and trusted by hash.

A configuration file found by walking up from the working directory may come
from a cloned repository. It may set bounds, but a key that sends data
elsewhere (:data:`REDIRECTING_KEYS`) is honoured only when the user has trusted
that file with ``toolcap config trust PATH``: its resolved path and the SHA-256
of its bytes are recorded in ``trusted.json`` in the user's configuration
directory, the way direnv allows a directory. A file changed since is untrusted
again. Files the user names (``--config``, ``TOOLCAP_CONFIG``), the user-level
``toolcap.toml`` and the environment are trusted as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from .core._errors import ConfigError

__all__ = [
    "MAX_CONFIG_BYTES",
    "REDIRECTING_KEYS",
    "read_regular_file",
    "trust",
    "trust_state",
    "untrust",
    "user_config_dir",
    "user_config_file",
]

#: A configuration file (or the trust record) larger than this is refused unread.
MAX_CONFIG_BYTES = 1024 * 1024

#: Top-level keys that decide where outputs go: refused from an untrusted file.
REDIRECTING_KEYS = ("artifacts",)

_TRUST_FILE = "trusted.json"


def user_config_dir() -> Path:
    """The user's toolcap configuration directory (``~/.config/toolcap`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_config_dir("toolcap", appauthor=False))


def user_config_file() -> Path:
    """The user-level configuration file, the last place toolcap looks."""
    return user_config_dir() / "toolcap.toml"


def read_regular_file(path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes.

    A device, FIFO or directory is refused without reading (``/dev/zero`` would
    never end, a FIFO would block), and so is a file that grows past ``limit``.
    """
    try:
        # Non-blocking, so that opening a FIFO does not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError("configuration file not found", file=str(path)) from None
    except OSError as error:
        raise ConfigError(f"cannot read configuration: {error.strerror}", file=str(path)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError("not a regular file; name a configuration file", file=str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise ConfigError(f"cannot read configuration: {error.strerror}", file=str(path)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise ConfigError(
            f"larger than {limit // 1024} KB; a configuration file is a few lines", file=str(path)
        )
    return b"".join(chunks)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _key(path: Path) -> str:
    return str(path.resolve())


def _records() -> dict[str, str]:
    record = user_config_dir() / _TRUST_FILE
    try:
        data = json.loads(read_regular_file(record))
    except ConfigError as error:
        if not record.exists():
            return {}
        raise ConfigError(f"unreadable trust record ({error}); remove it and trust again",
                          file=str(record)) from None
    except ValueError:
        raise ConfigError("the trust record is not valid JSON; remove it and trust again",
                          file=str(record)) from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def _save(records: dict[str, str]) -> None:
    directory = user_config_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = json.dumps({"version": 1, "files": dict(sorted(records.items()))}, indent=1) + "\n"
    # Written whole and renamed into place: a reader sees the old record or the new one.
    import tempfile  # here: only `toolcap config trust` writes

    fd, temporary = tempfile.mkstemp(prefix=".trusted-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, directory / _TRUST_FILE)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def trust_state(path: Path, data: bytes) -> str:
    """``"trusted"``, ``"changed"`` (trusted once, different bytes now) or ``"untrusted"``."""
    if path.resolve() == user_config_file().resolve():
        return "trusted"
    recorded = _records().get(_key(path))
    if recorded is None:
        return "untrusted"
    return "trusted" if recorded == _digest(data) else "changed"


def trust(path: Path) -> Path:
    """Trust ``path`` as it is now; returns its resolved path."""
    data = read_regular_file(path)
    records = _records()
    records[_key(path)] = _digest(data)
    _save(records)
    return path.resolve()


def untrust(path: Path) -> bool:
    """Forget ``path``; ``False`` if it was not trusted."""
    records = _records()
    if records.pop(_key(path), None) is None:
        return False
    _save(records)
    return True
