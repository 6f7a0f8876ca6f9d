"""MCP over this process's stdin and stdout, in a way the server side can end.

The SDK's ``stdio_server`` reads stdin in a worker thread, which cannot be
interrupted: a server that wants to stop (the client handed in its answer, or
Ctrl-C) would wait for the client's next line. When stdin is a pipe or a
socket, as when a client spawns the server, it is read on the event loop
instead, so stopping is immediate; otherwise (a terminal) the SDK's reader is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

LINE_LIMIT = 64 * 1024 * 1024
"""The longest JSON-RPC message (one line) read from stdin."""


class _Lines:
    """The text lines of a stream, as the SDK's stdin reader iterates them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


@contextlib.asynccontextmanager
async def _stdin_lines() -> AsyncIterator[_Lines | None]:
    """Stdin's lines read on the event loop, or None when stdin is not a pipe or socket."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        yield None
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        yield None
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    pipe = os.fdopen(os.dup(0), "rb", buffering=0)  # the transport closes its own copy
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        yield _Lines(reader)
    finally:
        transport.close()


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on stdin/stdout until stdin ends or the task is cancelled."""
    from mcp.server.stdio import stdio_server

    async with _stdin_lines() as lines:
        # Any async iterable of lines does for stdin; the SDK only iterates it.
        stdin = cast(Any, lines)
        async with stdio_server(stdin=stdin) as (read, write):
            await server.run(read, write, server.create_initialization_options())
