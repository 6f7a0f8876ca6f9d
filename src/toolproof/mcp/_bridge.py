"""The harness's side of the bridge into a sandbox: Unix sockets relaying to loopback endpoints.

A sandboxed command has no network but its own private loopback. What it may reach (the
episode's MCP tool endpoint, a model gateway) is listed as ``(VARIABLE, URL)`` routes, each
URL an ``http://`` endpoint on this host's loopback. For each distinct host port the bridge
listens on a Unix socket in a directory that is bound into the sandbox; inside, the
forwarder (``_forward.py``, run by the sandbox's Python) listens on the sandbox's loopback
and relays each connection to its socket::

    agent ─TCP─▶ 127.0.0.1:P (sandbox) ─forwarder─▶ bN.sock ─Bridge─▶ 127.0.0.1:P (host)

Each socket leads to one fixed endpoint, chosen by the harness: the command cannot name
another address. What it sends is bounded: at most ``max_connections`` at once (more are
closed at once) and ``max_bytes`` in all from the sandbox; past that every connection is
cut and new ones are refused, so a flooding agent slows nobody else down.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

LOOPBACK = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}
"""Hosts a route may name, and the address it is served on inside the sandbox."""

INSIDE_DIR = "/run/toolproof"
"""Where the bridge directory appears inside the sandbox."""

CHUNK = 64 * 1024


class BridgeError(ValueError):
    """A route is unusable (not a loopback http URL, a bad variable name)."""


@dataclass(frozen=True)
class Route:
    """One variable the command gets, and the host endpoint behind it.

    Attributes:
        variable: The environment variable, e.g. ``TOOLPROOF_MCP_URL``.
        host: The loopback address on the host (and, inside, where it is served).
        port: The port on the host (and, unless it cannot be bound, inside).
        prefix: The URL up to the port, e.g. ``http://127.0.0.1:``.
        suffix: The URL after the port, e.g. ``/mcp``.
    """

    variable: str
    host: str
    port: int
    prefix: str
    suffix: str


def parse_route(variable: str, url: str) -> Route:
    """Check one ``(VARIABLE, URL)`` pair.

    Raises:
        BridgeError: the variable is not a name, or the URL is not ``http://`` on loopback
            with a port.
    """
    if not variable or not (variable[0].isalpha() or variable[0] == "_"):
        raise BridgeError(f"bridged endpoint: {variable!r} is not an environment variable name")
    if not all(c.isalnum() or c == "_" for c in variable):
        raise BridgeError(f"bridged endpoint: {variable!r} is not an environment variable name")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BridgeError(f"bridged endpoint {variable}: {url!r} is not a URL ({exc})") from None
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or host not in LOOPBACK or port is None or "\0" in url:
        raise BridgeError(
            f"bridged endpoint {variable}: {url!r} must be http://127.0.0.1:PORT/... "
            "(a loopback address of this host, with a port); nothing else is bridged"
        )
    inside = LOOPBACK[host]
    shown = f"[{inside}]" if ":" in inside else inside
    rest = url.split("://", 1)[1]
    suffix = rest[rest.find("/") :] if "/" in rest else ""
    return Route(variable, inside, port, f"http://{shown}:", suffix)


class Bridge:
    """Listens on one Unix socket per endpoint while the ``async with`` block runs.

    Args:
        directory: An existing directory for the sockets (bound into the sandbox).
        routes: ``(VARIABLE, URL)`` pairs; see :func:`parse_route`.
        max_connections: Connections open at once, over all sockets.
        max_bytes: Bytes the sandbox may send in all; past it the bridge closes.

    Raises:
        BridgeError: a route is unusable (when the bridge is made).
    """

    def __init__(
        self,
        directory: Path,
        routes: Sequence[tuple[str, str]],
        *,
        max_connections: int = 64,
        max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.routes = [parse_route(variable, url) for variable, url in routes]
        self.targets: list[tuple[str, int]] = []
        for route in self.routes:
            if (route.host, route.port) not in self.targets:
                self.targets.append((route.host, route.port))
        self.directory = directory
        self.max_connections = max_connections
        self.max_bytes = max_bytes
        self.received = 0
        self.refused = 0
        self.exhausted = False
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    def spec(self) -> dict[str, Any]:
        """What the forwarder inside needs: where to listen, which socket, which variables."""
        return {
            "listen": [
                {"host": host, "port": port, "socket": posixpath.join(INSIDE_DIR, f"b{i}.sock")}
                for i, (host, port) in enumerate(self.targets)
            ],
            "env": {
                route.variable: [
                    route.prefix,
                    self.targets.index((route.host, route.port)),
                    route.suffix,
                ]
                for route in self.routes
            },
        }

    async def __aenter__(self) -> Self:
        try:
            for index, target in enumerate(self.targets):
                path = self.directory / f"b{index}.sock"
                server = await asyncio.start_unix_server(
                    functools.partial(self._accept, target=target), path=str(path), limit=CHUNK
                )
                self._servers.append(server)
                os.chmod(path, 0o777)  # the sandbox user connects (connect needs write)
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        self._servers.clear()
        for writer in list(self._writers):
            writer.transport.abort()  # each relay then sees its ends closed and returns
        tasks = list(self._tasks)
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=5)
            for task in stuck:
                task.cancel()
            await asyncio.gather(*stuck, return_exceptions=True)

    async def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: tuple[str, int]
    ) -> None:
        task = asyncio.current_task()
        if self.exhausted or len(self._tasks) >= self.max_connections or task is None:
            self.refused += 1
            writer.transport.abort()
            return
        self._tasks.add(task)
        self._writers.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            up_reader, upstream = await asyncio.open_connection(*target, limit=CHUNK)
            self._writers.add(upstream)
            await asyncio.gather(
                self._pump(reader, upstream, counted=True), self._pump(up_reader, writer)
            )
        except (OSError, asyncio.IncompleteReadError):
            pass  # the endpoint went away or the command hung up: its connection ends
        except asyncio.CancelledError:
            pass  # the bridge is closing (the stream machinery must not see a cancelled task)
        finally:
            self._tasks.discard(task)
            for end in (writer, upstream):
                if end is not None:
                    self._writers.discard(end)
                    end.transport.abort()

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, counted: bool = False
    ) -> None:
        """Copy one direction until EOF, then half-close (HTTP clients wait for the reply)."""
        while chunk := await source.read(CHUNK):
            if counted:
                self.received += len(chunk)
                if self.received > self.max_bytes:
                    self._exhaust()
                    return
            sink.write(chunk)
            await sink.drain()
        with contextlib.suppress(OSError, RuntimeError):
            if sink.can_write_eof():
                sink.write_eof()

    def _exhaust(self) -> None:
        """The sandbox sent more than ``max_bytes``: cut every connection, refuse new ones."""
        self.exhausted = True
        for writer in list(self._writers):
            writer.transport.abort()
