"""A bare TCP forwarder on asyncio: the least any relay written in Python adds to a call.

It parses nothing: each client connection gets a connection of its own to the
upstream, and bytes are passed on as they arrive, both ways. ``bench_proxy.py
--http`` measures it beside the proxy, so the proxy's own share of a call is the
difference between the two, on the machine and at the moment of the run.

Usage: ``python _tcpforward.py UPSTREAM_PORT`` (the upstream on 127.0.0.1); prints
``forwarding on http://127.0.0.1:PORT/mcp`` on stderr once it listens.
"""

from __future__ import annotations

import asyncio
import sys


class _ToClient(asyncio.Protocol):
    """The upstream side of one connection: what the upstream sends goes to the client."""

    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        self.client.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


class _FromClient(asyncio.Protocol):
    """The client side of one connection: what the client sends goes upstream."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.upstream: asyncio.BaseTransport | None = None
        self.early: list[bytes] = []  # sent before the upstream connection was made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        asyncio.get_running_loop().create_task(self._connect(transport))

    async def _connect(self, client: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        upstream, _ = await loop.create_connection(
            lambda: _ToClient(client), "127.0.0.1", self.upstream_port)
        self.upstream = upstream
        for data in self.early:
            upstream.write(data)
        self.early.clear()

    def data_received(self, data: bytes) -> None:
        if isinstance(self.upstream, asyncio.Transport):
            self.upstream.write(data)
        else:
            self.early.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()


async def _serve(upstream_port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _FromClient(upstream_port), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"forwarding on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1])))
