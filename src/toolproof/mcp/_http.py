"""Streamable HTTP: an MCP server on a local port, served on the episode's own event loop.

The tools must run on the loop that runs the episode (the recorder and the
gateway are not thread-safe), so uvicorn runs as a task of that loop rather
than in a thread. It takes no signals (the harness keeps Ctrl-C) and listens
on a socket bound before it starts, so port 0 gets a free port and the URL is
known at once.

An endpoint serves one episode, and is bounded so that its agent cannot grow the
harness without limit (invariant 8: no single episode can stop the run): at most
:data:`MAX_SESSIONS` MCP sessions at once (another ``initialize`` gets the SDK's
JSON-RPC error with HTTP 503; a session idle for :data:`SESSION_IDLE_S` is closed), at
most :data:`MAX_CONNECTIONS` connections (past it the oldest idle one is closed; one that
sends no request within :data:`IDLE_TIMEOUT_S` is closed too), bodies up to
:data:`MAX_BODY` bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]

PATH = "/mcp"
"""Where the MCP endpoint is mounted."""


class _SessionWatch:
    """ASGI middleware that notes when a client ends its MCP session (HTTP DELETE)."""

    def __init__(self, app: _App, ended: asyncio.Event) -> None:
        self.app = app
        self.ended = ended

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http" or scope["method"] != "DELETE":
            await self.app(scope, receive, send)
            return

        async def watch(message: _Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 300:
                self.ended.set()
            await send(message)

        await self.app(scope, receive, watch)


MAX_BODY = 16 * 1024 * 1024
"""The largest request body read (a JSON-RPC message); larger ones get 413 unread."""

MAX_SESSIONS = 16
"""MCP sessions one episode's endpoint holds at once; another ``initialize`` is refused."""

SESSION_IDLE_S = 600.0
"""Seconds a session may go without a request in flight before it is closed."""

MAX_CONNECTIONS = 64
"""Connections one episode's endpoint holds open; past it the oldest idle one is closed."""

IDLE_TIMEOUT_S = 30.0
"""Seconds a connection may stay open without a request (before its first, or between)."""


def _idle(protocol: object) -> bool:
    cycle = getattr(protocol, "cycle", None)
    return cycle is None or bool(cycle.response_complete)


def _bounded_protocol(max_connections: int, idle_timeout_s: float) -> type[Any]:
    """uvicorn's h11 protocol, with at most ``max_connections`` open: the oldest idle one
    (no request in flight) is closed for a new one, and a connection that sends no request
    in ``idle_timeout_s`` is closed (the gateway's rule, for one episode's endpoint)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    born = itertools.count()

    class BoundedH11Protocol(H11Protocol):
        order = 0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self.order = next(born)
            super().connection_made(transport)
            live = [p for p in self.connections if not p.transport.is_closing()]
            if len(live) > max_connections:
                idle = [p for p in live if p is not self and _idle(p)]
                victim = min(idle, key=lambda p: getattr(p, "order", 0), default=self)
                victim.transport.close()
            if not transport.is_closing():
                self._unset_keepalive_if_required()
                self.timeout_keep_alive_task = self.loop.call_later(
                    idle_timeout_s, self.timeout_keep_alive_handler
                )

    return BoundedH11Protocol


class _BodyLimit:
    """ASGI middleware that keeps a client from handing the server a body of any size.

    The SDK reads a request's whole body into memory, on the episode's loop: an agent
    sending gigabytes would stall every episode of the process. A declared length over
    the limit gets 413 at once; a chunked body is cut off (as a disconnect) past it.
    """

    def __init__(self, app: _App, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                body = f"request body over {self.limit} bytes\n".encode()
                headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
                await send({"type": "http.response.start", "status": 413, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        seen = 0

        async def limited() -> _Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, limited, send)


class HttpEndpoint:
    """Serves an MCP server over streamable HTTP while the ``async with`` block runs.

    Example::

        async with HttpEndpoint(server) as endpoint:
            ...  # a client connects to endpoint.url
            await endpoint.session_ended.wait()

    Args:
        server: The MCP server (see :func:`build_server`).
        host: The interface to listen on; keep it local, the tools are not authenticated.
        port: The port; 0 picks a free one.
        startup_timeout_s: How long to wait for the server to listen.

    Attributes:
        url: The endpoint URL, e.g. ``http://127.0.0.1:43121/mcp``.
        port: The port it listens on (the chosen one when asked for port 0).
        session_ended: Set when a client ended its session (the SDK clients send
            a DELETE when they close; clients of the stateless 2026 protocol
            revision have no session and never set it).
    """

    def __init__(
        self,
        server: Server[Any],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout_s: float = 10.0,
    ) -> None:
        self._server = server
        self._host = host
        self._port = port
        self._startup_timeout_s = startup_timeout_s
        self.session_ended = asyncio.Event()
        self.url = ""
        self.port = 0
        self._uvicorn: Any = None
        self._task: asyncio.Task[None] | None = None
        self._socket: socket.socket | None = None

    async def __aenter__(self) -> Self:
        import uvicorn

        class _QuietServer(uvicorn.Server):
            """A uvicorn server that leaves signal handling to its host."""

            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host, self._port))
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self.port = port = sock.getsockname()[1]
        shown = f"[{self._host}]" if family == socket.AF_INET6 else self._host
        self.url = f"http://{shown}:{port}{PATH}"
        app = self._server.streamable_http_app(
            streamable_http_path=PATH,
            host=self._host,
            max_sessions=MAX_SESSIONS,  # repeated initialize cannot grow the harness
            session_idle_timeout=SESSION_IDLE_S,
        )
        config = uvicorn.Config(
            _BodyLimit(_SessionWatch(app, self.session_ended), MAX_BODY),
            log_config=None,
            log_level="error",  # not a line per garbage request an agent sends
            access_log=False,
            lifespan="on",
            http=_bounded_protocol(MAX_CONNECTIONS, IDLE_TIMEOUT_S),
            ws="none",
            timeout_keep_alive=round(IDLE_TIMEOUT_S),
            timeout_graceful_shutdown=2,
        )
        self._uvicorn = _QuietServer(config)
        self._task = asyncio.ensure_future(self._uvicorn.serve(sockets=[sock]))
        try:
            await asyncio.wait_for(self._started(), self._startup_timeout_s)
        except BaseException:
            await self._stop()
            raise
        return self

    async def _started(self) -> None:
        assert self._task is not None
        while not self._uvicorn.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise RuntimeError(f"the MCP server on {self.url} stopped while starting")
            await asyncio.sleep(0.01)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stop()

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            self._uvicorn.should_exit = True
            # A server that failed while stopping has nothing left to serve: not an error here.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 10.0)
            if not task.done():  # a connection that would not close in time
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._socket is not None:
            self._socket.close()
            self._socket = None
