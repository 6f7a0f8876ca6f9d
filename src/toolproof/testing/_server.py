"""`ModelServer`: a scripted model behind real HTTP, for the official SDKs to call.

A starlette app served by uvicorn in a background thread on 127.0.0.1, on a
port the OS picks. Tests point an SDK at `base_url` (OpenAI) or
`anthropic_base_url` and assert on what the server received.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from toolproof.testing import _anthropic_wire, _openai_wire
from toolproof.testing._replies import ScriptedError, ScriptedReply
from toolproof.testing._request import ChatRequest
from toolproof.testing._script import Policy, Script
from toolproof.testing._wire import BadRequest, Wire, error_response

_NO_RETRY = {"x-should-retry": "false"}
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


class ModelServer:
    """A scripted OpenAI- and Anthropic-compatible model server.

    Use it as a context manager, or call `start()` and `stop()`:

        with ModelServer([ScriptedReply("hi")]) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="test")

    Endpoints: `POST /v1/chat/completions` (OpenAI, streamed or not),
    `POST /v1/messages` (Anthropic, streamed or not), `GET /v1/models` and
    `GET /v1/models/{id}` (in the shape of whichever SDK asks).

    Args:
        script: A `Script`, any policy (a callable from `ChatRequest` to
            `ScriptedReply`), or a list of replies, which becomes a `Script`
            that answers with a 500 once used up.
        host: The interface to listen on.
        port: The port; 0 (default) lets the OS pick a free one.
        stream_chunk_chars: The largest text or arguments delta in a stream;
            small values make clients reassemble many fragments.
        access_log: Log each request to the `uvicorn.access` logger (the
            server configures no logging of its own).
        startup_timeout_s: How long `start()` waits for the server to listen.

    Raises:
        ValueError: If `stream_chunk_chars` is below 1.
    """

    def __init__(
        self,
        script: Script | Policy | Iterable[ScriptedReply],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        stream_chunk_chars: int = 8,
        access_log: bool = False,
        startup_timeout_s: float = 10.0,
    ) -> None:
        if stream_chunk_chars < 1:
            raise ValueError(f"stream_chunk_chars must be >= 1, got {stream_chunk_chars!r}")
        self.policy: Policy = script if callable(script) else Script(script)
        self.host = host
        self.stream_chunk_chars = stream_chunk_chars
        self._requested_port = port
        self._access_log = access_log
        self._startup_timeout_s = startup_timeout_s
        self._lock = threading.Lock()
        self._chat_requests: list[ChatRequest] = []
        self._errors: list[Exception] = []
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._uvicorn: Any = None

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> Self:
        """Start serving in a background thread and wait until it listens.

        Returns:
            The server itself.

        Raises:
            RuntimeError: If it is already running, or does not come up in time.
            OSError: If the port cannot be bound.
        """
        import uvicorn  # imported here: nothing heavy happens at import time

        if self._thread is not None:
            raise RuntimeError("ModelServer is already running; call stop() first")
        # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only
        # when the listening socket says TCP, and without it every reply written in two
        # pieces waits ~40 ms for a delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._requested_port))
        except OSError:
            sock.close()
            raise
        config = uvicorn.Config(
            self._app(),
            log_config=None,
            log_level=None,
            access_log=self._access_log,
            lifespan="off",
            loop="asyncio",
            http="h11",
            ws="none",
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run,
            kwargs={"sockets": [sock]},
            name="toolproof-model-server",
            daemon=True,
        )
        self._uvicorn, self._thread = server, thread
        self._port = sock.getsockname()[1]
        thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                sock.close()
                raise RuntimeError(
                    f"ModelServer did not start listening on {self.host}:{self._port} within "
                    f"{self._startup_timeout_s}s; see the uvicorn.error log"
                )
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread; open connections are closed. Idempotent."""
        server, thread = self._uvicorn, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=10)
        self._uvicorn = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._port is not None else "not started"
        return f"ModelServer({where}, calls={self.calls})"

    # -- where it is, what it saw ---------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (after `start()`)."""
        if self._port is None:
            raise RuntimeError(
                "ModelServer has no port yet; call start() or use it in a with block"
            )
        return self._port

    @property
    def url(self) -> str:
        """The server's root, e.g. `http://127.0.0.1:PORT`."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI SDK's `base_url`: the root plus `/v1`."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK's `base_url`: the root, as that SDK adds `/v1` itself."""
        return self.url

    @property
    def chat_requests(self) -> list[ChatRequest]:
        """Every chat request received, normalised, in arrival order (a copy)."""
        with self._lock:
            return list(self._chat_requests)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON body of every chat request received, in arrival order (a copy).

        Bodies that are not a JSON object are answered with a 400 and not
        recorded; neither are `GET /v1/models` calls.
        """
        return [request.raw for request in self.chat_requests]

    @property
    def calls(self) -> int:
        """How many chat requests were received, retries included."""
        with self._lock:
            return len(self._chat_requests)

    @property
    def errors(self) -> list[Exception]:
        """Exceptions the policy raised (each was answered with a 500), in order."""
        with self._lock:
            return list(self._errors)

    # -- the app ---------------------------------------------------------------

    def _app(self) -> Starlette:
        async def openai_chat(request: Request) -> Response:
            return await self._chat(request, _openai_wire.WIRE)

        async def anthropic_messages(request: Request) -> Response:
            return await self._chat(request, _anthropic_wire.WIRE)

        return Starlette(
            routes=[
                Route("/v1/chat/completions", openai_chat, methods=["POST"]),
                Route("/v1/messages", anthropic_messages, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/models/{model_id:path}", self._models, methods=["GET"]),
                Route("/{path:path}", self._not_found, methods=_METHODS),
            ]
        )

    async def _chat(self, request: Request, wire: Wire) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return error_response(
                wire, ScriptedError(400, message=f"request body is not JSON: {exc}")
            )
        if not isinstance(body, dict):
            return error_response(
                wire, ScriptedError(400, message="request body must be a JSON object")
            )
        try:
            chat = wire.parse_request(body)
        except BadRequest as exc:
            return error_response(wire, ScriptedError(400, message=str(exc)))
        with self._lock:
            self._chat_requests.append(chat)
        try:
            reply = self.policy(chat)
            if not isinstance(reply, ScriptedReply):
                raise TypeError(f"the policy returned {reply!r}, not a ScriptedReply")
        except Exception as exc:
            with self._lock:
                self._errors.append(exc)
            message = f"toolproof.testing: the policy raised {exc!r}; see ModelServer.errors"
            return error_response(wire, ScriptedError(500, message=message, headers=_NO_RETRY))
        if reply.latency_s > 0:
            await asyncio.sleep(reply.latency_s)
        if reply.error is not None:
            return error_response(wire, reply.error)
        if not chat.stream:
            return JSONResponse(wire.render_reply(reply, chat))
        events = wire.render_stream(reply, chat, self.stream_chunk_chars)
        return StreamingResponse(
            _iterate(events), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    async def _models(self, request: Request) -> Response:
        wire = _wire_for(request)
        wanted = request.path_params.get("model_id")
        if wanted:
            return JSONResponse(wire.model_object(wanted))
        with self._lock:
            seen = dict.fromkeys(["toolproof-scripted", *(r.model for r in self._chat_requests)])
        return JSONResponse(wire.model_list(list(seen)))

    async def _not_found(self, request: Request) -> Response:
        wire = _wire_for(request)
        hint = (
            "; the Anthropic SDK adds /v1 itself, so give it ModelServer.anthropic_base_url"
            if wire.provider == "anthropic" and request.url.path.startswith("/v1/v1/")
            else ""
        )
        message = (
            f"toolproof.testing serves POST /v1/chat/completions, POST /v1/messages and "
            f"GET /v1/models, not {request.method} {request.url.path}{hint}"
        )
        return error_response(wire, ScriptedError(404, message=message, headers=_NO_RETRY))


async def _iterate(events: list[str]) -> AsyncIterator[str]:
    for event in events:
        yield event


def _wire_for(request: Request) -> Wire:
    """The wire of the SDK that sent a request with no provider-specific path."""
    return _anthropic_wire.WIRE if "anthropic-version" in request.headers else _openai_wire.WIRE
