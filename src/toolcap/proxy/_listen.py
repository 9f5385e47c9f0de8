"""What ``toolcap proxy --listen`` is told: the address, the token, the limits.

Plain data, checks and the listening socket, with no HTTP library, so the command
line can check its options before the ``mcp`` extra's server is imported.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = [
    "ServeOptions", "bearer_valid", "bind_socket", "is_loopback", "origin_allowed", "parse_listen",
]


@dataclass(frozen=True)
class ServeOptions:
    """How ``toolcap proxy --listen`` serves."""

    host: str = "127.0.0.1"
    port: int = 8000
    auth_token: str | None = None
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    max_sessions: int = 32
    idle_timeout: float = 1800.0
    max_body: int = 64 * 1024 * 1024


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (localhost or a loopback address)."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or ``PORT`` (on 127.0.0.1); ValueError with a message."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", value
    if host.startswith("[") != host.endswith("]") or (":" in host and not host.startswith("[")):
        raise ValueError(f"--listen must look like HOST:PORT or [IPv6]:PORT, got {value!r}")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"--listen needs a port number from 0 to 65535, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port_text)


def origin_allowed(origin: str, allowed: frozenset[str]) -> bool:
    """Whether a request's ``Origin`` is loopback or one of ``allowed`` (DNS rebinding)."""
    if origin in allowed or "*" in allowed:
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    return host is not None and is_loopback(host)


def bearer_valid(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token`` as a bearer token.

    Compared in constant time, so the time taken says nothing of the token.
    """
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode("utf-8", "replace"), token.encode("utf-8")
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (OSError if it cannot be had)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it each SSE event waits for the client's delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(256)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock
