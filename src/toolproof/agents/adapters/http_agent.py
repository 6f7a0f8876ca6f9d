"""``http://HOST:PORT/PATH`` and ``https://…``: an agent in any language, behind HTTP.

Each turn toolproof POSTs the transcript and the tools as versioned JSON to the
URL as given and reads the agent's next turn back (the protocol is specified in
``docs/agent-protocol.openapi.yaml``; ``examples/http_agent_server.py`` is a
reference server)::

    → {"protocol": "toolproof-agent/1", "messages": [...], "tools": [...],
       "step": 0, "task": {"id": "stock-sum", "epoch": 0, "suite": "core"}}
    ← {"content": null, "tool_calls": [{"id": "c1", "name": "get_stock",
       "arguments": {"product_id": "A"}}], "usage": {...}, "give_up": false}

Transient failures (429, 5xx, timeouts, refused connections) are retried like
a model provider's. The server *is* the agent under test, so whatever it does
wrong after the retries (a crash, a body that is not JSON or not of this shape)
is an ``agent_error`` with a message saying what came back, never an infra
error that would drop the episode from the denominators.

A reply body is read as a stream and refused past :data:`MAX_REPLY_BYTES` (never
buffered whole first), parsed by the one ingress for agent bytes
(``toolproof.trajectory.ingress.parse_json``: strict UTF-8, no lone surrogate escape such
as ``"\\udcff"``, no ``NaN`` or ``Infinity``, at most 32 levels deep), and the turn it holds
then meets the limits every agent's turn meets (``toolproof.agents.limits``: content,
arguments per call, calls per turn; usage counts and cost finite, non-negative, bounded).

Options (``--agent-arg``): ``api_key`` (sent as a bearer token), ``timeout``,
``max_retries``, ``backoff_base``, ``backoff_max``, ``cache``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import BaseModel, Field, ValidationError

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Message, Usage, ingress

from ..base import (
    AgentFactory,
    AgentInfraError,
    AgentSpec,
    AgentTurn,
    EpisodeContext,
    Observation,
    agent,
)
from ..limits import AgentFault
from ._caller import ModelCaller
from ._http import ssl_context
from ._options import CallOptions, parse_options
from ._reply import ModelReply, ReplyCall
from ._retry import Failure, status_failure
from ._schemas import neutral_tools

PROTOCOL = "toolproof-agent/1"
"""The protocol version toolproof speaks; a reply naming another one is refused."""

MAX_REPLY_BYTES = 8 * 1024 * 1024
"""Bytes of one reply body; a longer one is an agent_error (read no further than this)."""
MAX_ERROR_BYTES = 64 * 1024
"""Bytes read of an error reply (4xx, 5xx): enough to quote it."""


class AgentProtocolError(AgentFault):
    """The HTTP agent answered with something that is not a turn: an agent_error."""


class HttpOptions(CallOptions):
    """Options of HTTP agents (``api_key`` is sent as ``Authorization: Bearer KEY``)."""


class _Call(BaseModel):
    id: str = ""
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class _Usage(BaseModel):
    input_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(0, ge=0)
    cost_usd: float | None = Field(None, ge=0)


class _Turn(BaseModel):
    protocol: str | None = None
    content: str | None = None
    tool_calls: list[_Call] = Field(default_factory=list)
    usage: _Usage | None = None
    give_up: bool = False


def _transient(exc: BaseException) -> Failure | None:
    if isinstance(exc, httpx.HTTPStatusError):
        text = exc.response.text[:200]
        return status_failure(exc.response.status_code, repr(text), exc.response.headers)
    if isinstance(exc, httpx.TimeoutException):
        return Failure("retry", "the request timed out")
    if isinstance(exc, httpx.TransportError):
        return Failure("retry", f"connection failed: {exc!r}")
    return None


def protocol_message(message: Message) -> dict[str, Any]:
    """A transcript message as the protocol sends it."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "raw_arguments": c.raw_arguments}
            for c in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
        "name": message.name,
    }


def _is_json(body: bytes) -> bool:
    """Whether ``body`` parses as JSON at all (a nesting too deep to parse counts as JSON)."""
    try:
        json.loads(body)
    except RecursionError:
        return True
    except ValueError:
        return False
    return True


def parse_turn(body: bytes, status: int, content_type: str, url: str, step: int) -> ModelReply:
    """Read the agent's answer.

    Raises:
        AgentProtocolError: not JSON, or not a turn, or another protocol version.
    """
    where = f"the HTTP agent at {url} answered step {step}"
    try:
        data = ingress.parse_json(body, "the body", MAX_REPLY_BYTES)
    except ingress.IngressError as exc:
        if not _is_json(body):
            raise AgentProtocolError(
                f"{where} with a body that is not JSON (HTTP {status}, "
                f"{content_type or 'no type'}): {body[:200].decode('utf-8', 'replace')!r}; it "
                "must answer a JSON turn, see docs/agent-protocol.openapi.yaml"
            ) from None
        raise AgentProtocolError(
            f"{where} with JSON toolproof refuses: {exc} (see docs/evaluate-your-agent.md, limits)"
        ) from None
    try:
        turn = _Turn.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        raise AgentProtocolError(
            f"{where} with JSON that is not a turn ({details}); expected "
            '{"content": str|null, "tool_calls": [{"id", "name", "arguments"}], '
            '"usage": {...}|null, "give_up": bool}, see docs/agent-protocol.openapi.yaml'
        ) from None
    if turn.protocol is not None and turn.protocol != PROTOCOL:
        raise AgentProtocolError(
            f"{where} in protocol {turn.protocol!r}; toolproof speaks {PROTOCOL!r}"
        )
    usage = turn.usage
    return ModelReply(
        content=turn.content,
        tool_calls=[
            ReplyCall(
                id=c.id,
                name=c.name,
                arguments=c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
            )
            for c in turn.tool_calls
        ],
        input_tokens=usage.input_tokens if usage is not None else None,
        output_tokens=usage.output_tokens if usage is not None else None,
        cost_usd=usage.cost_usd if usage is not None else None,
        give_up=turn.give_up,
    )


async def read_capped(response: httpx.Response, url: str, step: int) -> bytes:
    """The body of a streamed reply, read no further than the limit.

    An error reply (4xx, 5xx) is cut at :data:`MAX_ERROR_BYTES` (only its start is
    quoted); a turn longer than :data:`MAX_REPLY_BYTES` is refused.

    Raises:
        AgentProtocolError: the body (or its declared content-length) is over the limit.
    """
    limit = MAX_ERROR_BYTES if response.status_code >= 400 else MAX_REPLY_BYTES
    too_big = (
        f"the HTTP agent at {url} answered step {step} with a body of more than "
        f"{MAX_REPLY_BYTES:,} bytes, the limit of one turn; send a smaller turn "
        "(see docs/evaluate-your-agent.md, limits)"
    )
    declared = response.headers.get("content-length", "")
    if limit == MAX_REPLY_BYTES and declared.isdigit() and int(declared) > limit:
        raise AgentProtocolError(f"{too_big} (content-length {int(declared):,})")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            if limit == MAX_REPLY_BYTES:
                raise AgentProtocolError(too_big)
            chunks.append(chunk[: limit - (size - len(chunk))])
            break
        chunks.append(chunk)
    return b"".join(chunks)


class HttpAgent:
    """One episode of an agent behind HTTP."""

    def __init__(
        self, url: str, options: HttpOptions, caller: ModelCaller, ctx: EpisodeContext
    ) -> None:
        self.url = url
        self._caller = caller
        self._task = {"id": ctx.task_id, "epoch": ctx.epoch, "suite": ctx.suite}
        headers = {"user-agent": f"toolproof ({PROTOCOL})"}
        if options.api_key:
            headers["authorization"] = f"Bearer {options.api_key}"
        # The process's TLS context: building one per episode loads the CA bundle each time.
        self._client = httpx.AsyncClient(
            timeout=options.timeout, headers=headers, verify=ssl_context()
        )

    def request(self, observation: Observation) -> dict[str, Any]:
        """The JSON body of one turn's request."""
        return {
            "protocol": PROTOCOL,
            "messages": [protocol_message(m) for m in observation.messages],
            "tools": neutral_tools(observation.tools),  # a later user turn may offer more
            "step": observation.step,
            "task": self._task,
        }

    async def act(self, observation: Observation) -> AgentTurn:
        """POST the transcript; read the next turn."""
        body = self.request(observation)

        async def send() -> ModelReply:
            async with self._client.stream("POST", self.url, json=body) as streamed:
                data = await read_capped(streamed, self.url, observation.step)
            response = httpx.Response(
                streamed.status_code,
                headers=streamed.headers,
                content=data,
                request=streamed.request,
            )
            response.raise_for_status()
            return parse_turn(
                data,
                response.status_code,
                response.headers.get("content-type", ""),
                self.url,
                observation.step,
            )

        try:
            reply, retries = await self._caller.reply({"agent": self.url, **body}, send)
        except AgentInfraError as exc:
            raise AgentProtocolError(f"{exc} (the HTTP agent is the agent under test)") from exc
        usage = None
        if reply.input_tokens is not None:
            usage = Usage(
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens or 0,
                cost_usd=reply.cost_usd,
            )
        return reply.turn(usage, retries)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._client.aclose()


def _build(spec: AgentSpec) -> AgentFactory:
    url = f"{spec.kind}:{spec.target or ''}"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        parsed, error = None, str(exc)
    else:
        error = "it has no host"
    if parsed is None or not parsed.host:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"{url!r} is not a URL ({error}); e.g. http://127.0.0.1:8000",
                )
            ]
        )
    options = parse_options(HttpOptions, spec)
    caller = ModelCaller(url, options, _transient)

    def factory(ctx: EpisodeContext) -> HttpAgent:
        return HttpAgent(url, options, caller, ctx)

    return factory


build_http = agent("http")(_build)
build_https = agent("https")(_build)
