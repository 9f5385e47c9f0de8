"""The proxy's HTTP client for a ``--url`` server: :class:`~toolcap.proxy._rawhttp.RawClient`
where it applies, ``httpx2`` where it does not (an HTTP proxy from the environment),
one way to send a request and to read a body to its end with either."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from ._rawhttp import RawClient, RawResponse, header_safe

__all__ = ["drain", "new_client", "send_request", "usable_for"]


def usable_for(url: str, headers: dict[str, str]) -> bool:
    """Whether this client can reach ``url``: http(s), no HTTP proxy configured for it,
    and header names and values that cannot break the request apart."""
    import urllib.request

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if (proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(
        parts.hostname
    ):
        return False
    return all(header_safe(name) and header_safe(value) for name, value in headers.items())


def new_client(url: str, headers: dict[str, str], connect: float, read: float) -> Any:
    """The client for ``url``: a :class:`RawClient` where it is usable, else an
    ``httpx2.AsyncClient`` (through an HTTP proxy from the environment, say)."""
    if usable_for(url, headers):
        return RawClient(url, headers, connect, read)
    import httpx2

    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(connect, read=read))


async def send_request(client: Any, url: str, method: str, headers: dict[str, str],
                       body: bytes, read_timeout: float | None) -> Any:
    """Send a request with a :class:`RawClient` or an ``httpx2.AsyncClient``; its
    response, read as it is iterated (``read_timeout`` None: wait for ever)."""
    if isinstance(client, RawClient):
        return await client.request(method, headers, body, read_timeout)
    import httpx2

    timeout = client.timeout if read_timeout is not None else httpx2.Timeout(
        client.timeout.connect, read=None)
    request = client.build_request(method, url, content=body or None, headers=headers,
                                   timeout=timeout)
    return await client.send(request, stream=True)


async def drain(chunks: AsyncIterator[bytes], seconds: float, response: Any = None) -> None:
    """Read a body to its end (so that its connection can serve the next request),
    for ``seconds`` at most (then it is left unread: asyncio.TimeoutError). ``chunks``
    of a :class:`RawResponse` (``response``) are read with no timer where they have
    arrived already, as a small answer's end has."""
    if isinstance(response, RawResponse):
        import httpx2

        response.finish_within(seconds)
        try:
            await _read_all(chunks)
        except httpx2.ReadTimeout:
            raise asyncio.TimeoutError from None
        return
    if sys.version_info < (3, 11):
        await asyncio.wait_for(_read_all(chunks), seconds)
        return
    async with asyncio.timeout(seconds):  # a timer, not a task as wait_for makes
        await _read_all(chunks)


async def _read_all(chunks: AsyncIterator[bytes]) -> None:
    async for _ in chunks:
        pass
