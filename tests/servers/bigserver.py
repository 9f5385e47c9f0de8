"""A small MCP server, written with the official SDK, whose tools return the
awkward results the proxy exists for: large texts, many blocks, media,
embedded resources, structured content with an output schema, progress, a
cancellable call, a crash and a malformed message.

Run: ``python bigserver.py`` (stdio) or ``python bigserver.py --http PORT``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.server.stdio import stdio_server
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    Completion,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel, Field

# Logging, sampling and roots are deprecated in the newest protocol revision but
# still part of the ones clients negotiate today; the proxy must relay them.
warnings.filterwarnings("ignore", message=r"The \w+ capability is deprecated")

server = MCPServer(name="bigserver", version="1.0.0", instructions="Test server for toolcap.")

# The wire, kept so that some tools can write malformed lines onto it.
_WIRE: Any = None
_WIRE_BYTES: Any = None
# Calls that were cancelled, by token, and the events tests wait on.
_CANCELLED: dict[str, anyio.Event] = {}


def numbered_text(size: int, tag: str = "line") -> str:
    """Deterministic text of exactly ``size`` bytes, one numbered line after another."""
    out = io.StringIO()
    written = 0
    n = 0
    while written < size:
        line = f"{tag} {n:07d} the quick brown fox jumps over the lazy dog\n"
        out.write(line)
        written += len(line)
        n += 1
    return out.getvalue()[:size]


def payload(size: int, seed: str) -> bytes:
    """Deterministic pseudo-random bytes."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


def _event(token: str) -> anyio.Event:
    if token not in _CANCELLED:
        _CANCELLED[token] = anyio.Event()
    return _CANCELLED[token]


@server.tool()
def big_text(size: int, tag: str = "line") -> str:
    """Return ``size`` bytes of numbered lines."""
    return numbered_text(size, tag)


@server.tool()
def cjk_text(chars: int) -> str:
    """Return ``chars`` CJK characters (3 UTF-8 bytes each)."""
    return ("漢字かな交じり文" * (chars // 8 + 1))[:chars]


@server.tool()
def repeated(unit: str, times: int) -> str:
    """Return ``unit`` repeated ``times`` times (quotes, backslashes, emoji: any text)."""
    return unit * times


@server.tool()
def small(text: str = "hello") -> str:
    """Return the text as given."""
    return text


@server.tool()
def many_blocks(count: int, size: int) -> CallToolResult:
    """Return ``count`` text blocks of ``size`` bytes each, plus one short block."""
    blocks: list[Any] = [TextContent(text=numbered_text(size, f"b{i}")) for i in range(count)]
    blocks.append(TextContent(text="short tail block"))
    return CallToolResult(content=blocks)


@server.tool()
def image(size: int) -> CallToolResult:
    """Return a caption, an image of ``size`` bytes and a short text."""
    data = base64.b64encode(payload(size, "image")).decode()
    return CallToolResult(
        content=[
            TextContent(text="here is the image"),
            ImageContent(data=data, mime_type="image/png"),
            TextContent(text="done"),
        ]
    )


@server.tool()
def audio(size: int) -> CallToolResult:
    """Return an audio block of ``size`` bytes."""
    data = base64.b64encode(payload(size, "audio")).decode()
    return CallToolResult(content=[AudioContent(data=data, mime_type="audio/wav")])


@server.tool()
def embedded(size: int, blob: bool = False) -> CallToolResult:
    """Return an embedded resource of ``size`` bytes (text or blob) and a resource link."""
    if blob:
        contents: Any = BlobResourceContents(
            uri="file:///data.bin",
            mime_type="application/octet-stream",
            blob=base64.b64encode(payload(size, "blob")).decode(),
        )
    else:
        contents = TextResourceContents(
            uri="file:///data.txt", mime_type="text/plain", text=numbered_text(size, "res")
        )
    return CallToolResult(
        content=[
            EmbeddedResource(resource=contents),
            ResourceLink(name="data", uri="file:///data.txt", mime_type="text/plain"),
        ]
    )


class Report(BaseModel):
    """A structured result."""

    title: str
    body: str
    lines: int


@server.tool()
def structured(size: int) -> Report:
    """Return a structured report whose body is ``size`` bytes."""
    body = numbered_text(size, "rep")
    return Report(title="report", body=body, lines=body.count("\n"))


class Row(BaseModel):
    """One record of a listing."""

    id: int
    name: str
    state: Literal["open", "closed"]


class Listing(BaseModel):
    """A structured page of records."""

    total: int
    rows: list[Row]
    next_cursor: str | None = None


@server.tool()
def listing(count: int) -> Listing:
    """Return a listing of ``count`` records."""
    rows = [Row(id=i, name=f"record {i:06d} " + "x" * 40, state="open" if i % 3 else "closed")
            for i in range(count)]
    return Listing(total=count, rows=rows, next_cursor="c2")


class Pair(BaseModel):
    """A result whose schema holds a tuple (prefixItems): a cut could break it."""

    pair: tuple[int, str]


@server.tool()
def pair(size: int) -> Pair:
    """Return a pair whose text is ``size`` bytes."""
    return Pair(pair=(size, numbered_text(size, "pair")))


class Digest(BaseModel):
    """A result whose one member is a constrained string: a cut keeps it whole or not at all."""

    hex: Annotated[str, Field(pattern=r"^[0-9a-f]+$")]


@server.tool()
def digest(size: int) -> Digest:
    """Return ``size`` hex digits: over the limit, no cut of it matches its schema."""
    return Digest(hex=hashlib.sha256(b"digest").hexdigest() * (size // 64) or "0")


@server.tool()
def fail(size: int) -> CallToolResult:
    """Return an error result of ``size`` bytes."""
    return CallToolResult(content=[TextContent(text=numbered_text(size, "err"))], is_error=True)


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, then return."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    await ctx.info("slow finished")
    return f"did {steps} steps"


@server.tool()
async def chatty(count: int, size: int, path: str, ctx: Context) -> str:
    """Send ``count`` log messages of ``size`` characters as fast as the client takes
    them, writing into ``path`` how many were sent so far; then return."""
    text = "n" * size
    for i in range(count):
        await ctx.info(f"{i:08d} {text}")
        Path(path).write_text(str(i + 1))
    return f"sent {count}"


@server.tool()
async def block(token: str) -> str:
    """Wait until cancelled; record the cancellation under ``token``."""
    try:
        await anyio.sleep_forever()
    finally:
        _event(token).set()
    return "unreachable"


@server.tool()
async def gate(token: str, ctx: Context) -> str:
    """Report progress, wait (up to 60 s) for ``release`` with ``token``, report again, return."""
    await ctx.report_progress(1, 2, "before the gate")
    with anyio.move_on_after(60):
        await _event(f"gate:{token}").wait()
    await ctx.report_progress(2, 2, "after the gate")
    return f"passed the gate {token}"


@server.tool()
def release(token: str) -> str:
    """Open the gate ``token`` for the call of ``gate`` waiting at it."""
    _event(f"gate:{token}").set()
    return f"released {token}"


@server.tool()
async def was_cancelled(token: str) -> str:
    """Wait (up to 20 s) for the call of ``block`` with ``token`` to be cancelled."""
    with anyio.move_on_after(20):
        await _event(token).wait()
        return "cancelled"
    return "not cancelled"


@server.tool()
def crash() -> str:
    """Kill the server in the middle of the call."""
    os._exit(3)


@server.tool()
async def announce(ctx: Context) -> str:
    """Send a tools list-changed and a resource-updated notification."""
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_resource_updated("small://hello")
    return "announced"


@server.tool()
def pid() -> str:
    """Return the server's process id."""
    return str(os.getpid())


@server.tool()
async def garbage() -> str:
    """Write a line that is not JSON onto the wire, then answer normally."""
    await _WIRE.write("this is {not json\n")
    await _WIRE.flush()
    return "after garbage"


@server.tool(structured_output=False)  # it writes its own reply, with no structured twin
async def bad_utf8(ctx: Context) -> str:
    """Answer this call with a line holding bytes that are not UTF-8, then wait."""
    await _WIRE.flush()
    head = '{"jsonrpc":"2.0","id":' + _json_id(ctx.request_id)
    head += ',"result":{"content":[{"type":"text","text":"bad '
    await anyio.to_thread.run_sync(_write_raw, head.encode() + b'\xff\xfe bytes"}]}}\n')
    await anyio.sleep_forever()
    return "unreachable"


def _write_raw(data: bytes) -> None:
    _WIRE_BYTES.write(data)
    _WIRE_BYTES.flush()


@server.tool(structured_output=False)  # it writes its own reply, with no structured twin
async def broken_reply(ctx: Context) -> str:
    """Answer this call with a truncated JSON line, then never answer properly."""
    await _WIRE.write('{"jsonrpc":"2.0","id":' + _json_id(ctx.request_id) + ',"result":{"cont\n')
    await _WIRE.flush()
    await anyio.sleep_forever()
    return "unreachable"


def _json_id(request_id: Any) -> str:
    import json

    try:
        return json.dumps(int(request_id))
    except (TypeError, ValueError):
        return json.dumps(str(request_id))


@server.tool()
async def sample(prompt: str, ctx: Context) -> str:
    """Ask the client's model (sampling) and return its answer."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(text=prompt))],
        max_tokens=20,
    )
    content = result.content
    return f"sampled: {getattr(content, 'text', content)}"


class Answer(BaseModel):
    """What the elicitation asks the user for."""

    colour: str


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the user (elicitation) for a colour."""
    result = await ctx.elicit("Which colour?", schema=Answer)
    return f"{result.action}: {result.data.colour if result.data else ''}"


@server.tool()
async def roots(ctx: Context) -> str:
    """Ask the client for its roots."""
    result = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in result.roots)


@server.tool()
def header(name: str, ctx: Context) -> str:
    """Return the value of an HTTP request header (Streamable HTTP only)."""
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), headers.get(name, "")))


@server.tool()
def regional(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
             shard: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Shard"})] = 0) -> str:
    """Name the region called (mirrored, over HTTP on 2026-07-28, in Mcp-Param-Region)."""
    return f"region {region} shard {shard}"


@server.resource("big://text/{size}")
def big_resource(size: str) -> str:
    """A text resource of ``size`` bytes."""
    return numbered_text(int(size), "rsc")


@server.resource("small://hello")
def small_resource() -> str:
    """A small text resource."""
    return "hello resource"


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> Completion:
    """Complete a prompt argument from a fixed list."""
    names = ["Ada", "Alan", "Grace"]
    return Completion(values=[n for n in names if n.startswith(argument.value)])


@server.prompt()
def greet(name: str) -> str:
    """A prompt that greets."""
    return f"Say hello to {name}."


@server.prompt()
def big_prompt(size: str, image: str = "0") -> list[Any]:
    """A prompt whose first message is ``size`` bytes of numbered lines, then a short
    reply and, when ``image`` is not 0, an image of that many bytes."""
    messages = [
        UserMessage(TextContent(text=numbered_text(int(size), "pr"))),
        AssistantMessage(TextContent(text="Understood.")),
    ]
    if int(image):
        data = base64.b64encode(payload(int(image), "prompt-image")).decode()
        messages.append(UserMessage(ImageContent(data=data, mime_type="image/png")))
    return messages


@server.prompt()
def many_messages(count: str, size: str) -> list[Any]:
    """A conversation of ``count`` messages of ``size`` bytes, user and assistant in
    turn, each starting with its number."""
    return [(UserMessage if i % 2 == 0 else AssistantMessage)(
        TextContent(text=f"m{i:05d} ".ljust(int(size), "x"))) for i in range(int(count))]


async def _serve_stdio() -> None:
    global _WIRE, _WIRE_BYTES
    # Our own handles on the pipes, so some tools can write raw bytes to the wire.
    _WIRE_BYTES = os.fdopen(os.dup(1), "wb")
    out = io.TextIOWrapper(_WIRE_BYTES, encoding="utf-8", write_through=True)
    inp = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8")
    _WIRE = anyio.wrap_file(out)
    print("bigserver: serving on stdio", file=sys.stderr, flush=True)
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin=anyio.wrap_file(inp), stdout=_WIRE) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        anyio.run(_serve_stdio)


if __name__ == "__main__":
    main()
