"""``ModelGateway``: the HTTP server on loopback that agents' model SDKs talk to.

A Starlette app served by uvicorn on a thread of its own (its own event loop), so
that an agent blocking the harness's loop, or the harness blocking, never stalls the
other's model calls. One gateway serves every run of the process (:func:`shared`);
each episode has its own path, opened with :meth:`ModelGateway.open`::

    POST /e/<token>/openai/v1/chat/completions     OpenAI Chat Completions (JSON or SSE)
    POST /e/<token>/anthropic/v1/messages          Anthropic Messages (JSON or SSE)

Anything else, an unknown or closed token included, is a 404 with the same body (a
wrong token tells nothing about the right ones). Bodies over ``max_body_bytes`` are
413, a body that is not sent within ``body_timeout_s`` is 408 (a slow client holds
its own connection only), a body the ingress refuses (not UTF-8, not JSON, nested
too deep, a lone surrogate escape) is 400: every refusal is JSON in the API's own
error shape, and nothing an agent sends makes a 500 or a traceback.

No one episode can starve another: each has at most ``max_in_flight`` requests
in flight (more get 429 at once), connections are capped process-wide with idle ones
closed first (:mod:`._conn`), and ``--max-model-calls`` bounds the upstream calls.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as StarletteRoute

from . import _limit
from ._conn import fair_protocol
from ._forward import ENDPOINTS, NO_RETRY, check_headers, check_request, error, forward
from ._link import EpisodeLink, Sink, new_token
from ._route import Api, Route

MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest request body accepted (16 MiB: long transcripts fit, a flood does not)."""

MAX_CONNECTIONS = 1024
"""Connections open at once; past it the oldest idle one is closed (a flood cannot use up
the harness's files, nor shut other episodes out)."""

MAX_IN_FLIGHT = 32
"""Requests one episode may have in flight at once; more are refused with 429."""

BODY_TIMEOUT_S = 30.0
"""Seconds a client has to send its whole body once the request has begun."""

IDLE_TIMEOUT_S = 30.0
"""Seconds a connection may stay open without a request (before its first, or between)."""


class ModelGateway:
    """The model gateway: per-episode paths in front of the run's providers.

    Args:
        max_body_bytes: The largest request body.
        body_timeout_s: How long a client may take to send a body.
        startup_timeout_s: How long :meth:`start` waits for the server to listen.
        max_connections: Connections open at once (idle ones make room for new ones).
        max_in_flight: Requests one episode may have in flight at once.
        idle_timeout_s: How long a connection may stay open without a request.
    """

    def __init__(
        self,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        body_timeout_s: float = BODY_TIMEOUT_S,
        startup_timeout_s: float = 10.0,
        max_connections: int = MAX_CONNECTIONS,
        max_in_flight: int = MAX_IN_FLIGHT,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.max_connections = max_connections
        self.max_in_flight = max_in_flight
        self.idle_timeout_s = idle_timeout_s
        self._startup_timeout_s = startup_timeout_s
        self._links: dict[str, EpisodeLink] = {}
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self._client: httpx.AsyncClient | None = None
        self.max_concurrent: int | None = None
        """At most this many upstream calls at once across every run (``--max-model-calls``)."""
        self._slots: asyncio.Semaphore | None = None

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> ModelGateway:
        """Serve on a free loopback port, on a daemon thread; return when it listens.

        Raises:
            RuntimeError: it did not come up in time.
        """
        import uvicorn

        if self.running:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            self._app(),
            log_config=None,
            log_level="error",  # not a line per garbage request an agent sends (as mcp's)
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http=fair_protocol(self.max_connections, self.idle_timeout_s),
            ws="none",
            timeout_keep_alive=max(1, round(self.idle_timeout_s)),
            limit_concurrency=None,  # no 503 for all: the protocol closes idle connections first
            timeout_graceful_shutdown=2,
            h11_max_incomplete_event_size=64 * 1024,  # headers: a flood is refused early
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=asyncio.run,
            args=(self._serve(server, sock),),
            name="toolproof-gateway",
            daemon=True,
        )
        self._server, self._thread = server, thread
        self._port = sock.getsockname()[1]
        thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the model gateway did not start on {self.base}")
            time.sleep(0.01)
        return self

    async def _serve(self, server: Any, sock: socket.socket) -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            client, self._client, self._slots = self._client, None, None
            if client is not None:
                await client.aclose()
            sock.close()

    def stop(self) -> None:
        """Stop serving (idempotent); open links stay, and answer nothing."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=10)
        self._server = self._thread = None

    def open(self, route: Route, epoch: int, sink: Sink | None = None) -> EpisodeLink:
        """Open an episode's path (starting the server if needed)."""
        self.start()
        link = EpisodeLink(new_token(), epoch, route, self.base, sink)
        with self._lock:
            self._links[link.token] = link
        return link

    def close(self, link: EpisodeLink) -> None:
        """Close an episode's path: later calls through it are 404."""
        with self._lock:
            self._links.pop(link.token, None)
        link.sink = None

    def link(self, token: str) -> EpisodeLink | None:
        """The open link of a token, or None."""
        with self._lock:
            return self._links.get(token)

    def _app(self) -> Starlette:
        async def handle(request: Request) -> Response:
            return await self._handle(request)

        return Starlette(
            routes=[StarletteRoute("/{path:path}", handle, methods=["GET", "POST", "PUT"])]
        )

    async def _handle(self, request: Request) -> Response:
        try:
            return await self._route_request(request)
        except Exception as exc:  # the gateway's own failure: a JSON 500, never a traceback
            return JSONResponse(
                {"error": {"message": f"the model gateway failed: {type(exc).__name__}"[:300]}},
                status_code=500,
                headers=NO_RETRY,
            )

    async def _route_request(self, request: Request) -> Response:
        parts = request.url.path.strip("/").split("/")
        # e / TOKEN / API / v1 / endpoint...
        if len(parts) < 5 or parts[0] != "e" or parts[2] not in ENDPOINTS or parts[3] != "v1":
            return _not_found()
        link = self.link(parts[1])
        api: Api = "anthropic" if parts[2] == "anthropic" else "openai"
        rest = "/".join(parts[4:])
        if link is None or rest not in ENDPOINTS[api]:
            return _not_found()
        if request.method != "POST":
            return error(api, 405, f"{request.method} is not allowed here; POST a request")
        if link.in_flight >= self.max_in_flight:  # one episode's flood waits for nobody else
            return error(
                api,
                429,
                f"this episode already has {self.max_in_flight} model calls in flight; "
                "wait for one to finish",
                "rate_limit_error",
            )
        link.in_flight += 1  # on the gateway's loop only: no lock needed
        try:
            return await self._answer(request, link, api, rest)
        finally:
            link.in_flight -= 1

    async def _answer(self, request: Request, link: EpisodeLink, api: Api, rest: str) -> Response:
        refused = check_headers(api, request.headers)
        if refused is not None:
            return refused
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return error(api, 413, f"the request body is over {self.max_body_bytes} bytes")
        try:
            raw = await asyncio.wait_for(self._body(request), self.body_timeout_s)
        except TimeoutError:
            return error(api, 408, f"the request body did not arrive within {self.body_timeout_s}s")
        except ClientDisconnect:
            return error(api, 400, "the client went away before sending its body")
        if raw is None:
            return error(api, 413, f"the request body is over {self.max_body_bytes} bytes")
        body = check_request(api, raw, self.max_body_bytes)
        if isinstance(body, Response):
            return body
        client = self._http()
        try:
            return await forward(link, api, rest, body, request.headers, client, self._limit())
        except httpx.HTTPError as exc:  # a transport failure the route's retrier gave up on
            link.fail(f"model gateway: {api}: {type(exc).__name__}: {exc}"[:500])
            return error(api, 502, "the model provider could not be reached", "api_error")
        except Exception as exc:  # the gateway's own failure on a request the ingress passed
            link.fail(f"model gateway: {api}: {type(exc).__name__}: {exc}"[:500])
            return error(api, 500, f"the model gateway failed: {type(exc).__name__}", "api_error")

    async def _body(self, request: Request) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    def _limit(self) -> asyncio.Semaphore | None:
        if self.max_concurrent is not None and self._slots is None:  # on the gateway's loop
            self._slots = asyncio.Semaphore(self.max_concurrent)
        return self._slots

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # made on the gateway's loop, used only there
            self._client = httpx.AsyncClient(trust_env=False)
        return self._client


def _not_found() -> Response:
    return JSONResponse(
        {"error": {"message": "no such model endpoint", "type": "not_found"}},
        status_code=404,
        headers=NO_RETRY,
    )


_SHARED: ModelGateway | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> ModelGateway:
    """The process's gateway, started on first use (a daemon thread; it ends with the process).

    ``toolproof run`` stops it when the run ends (:func:`stop_shared`).
    """
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ModelGateway()
            # set by limit_shared, maybe before this module was imported
            _SHARED.max_concurrent = _limit.shared_limit[0]
        return _SHARED


def stop_shared() -> None:
    """Stop the process's gateway if it runs (a later :func:`shared` starts it again)."""
    with _SHARED_LOCK:
        gateway = _SHARED
    if gateway is not None:
        gateway.stop()
