"""``anthropic:MODEL``: a Claude model behind the Anthropic Messages API, via the ``anthropic`` SDK.

The system prompt goes in ``system``; tool calls are ``tool_use`` blocks and
their results ``tool_result`` blocks, all results of one turn merged into one
user message (the API wants user and assistant turns to alternate). Malformed
tool input and unknown tools pass through to the gateway, as with ``openai``.

Options (``--agent-arg``): ``base_url``, ``api_key``, ``temperature``,
``max_tokens`` (default 4096, the API requires one), ``stream``, ``timeout``,
``max_retries``, ``backoff_base``, ``backoff_max``, ``prices``, ``cache``.
The Messages API has no ``seed``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Message

from ..base import AgentFactory, AgentSpec, AgentTurn, EpisodeContext, Observation, agent
from ._caller import ModelCaller
from ._cost import PriceTable
from ._http import capped_transport, too_large
from ._options import ChatOptions, parse_options, require_sdk, require_target
from ._reply import ModelReply, ReplyCall, reported_count
from ._retry import BadResponse, Failure, sdk_error_message, status_failure
from ._schemas import anthropic_tools
from ._shared_client import SharedClient

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096
_BODY_ONLY = ("temperature",)
"""Request fields the SDK's ``create`` does not take as arguments; sent in ``extra_body``."""


def anthropic_messages(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """A toolproof transcript as the Messages API's ``system`` and ``messages``."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "system":
            system.append(message.content or "")
        elif message.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content or "",
            }
            add("user", [result])
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                # Malformed arguments cannot be sent back as an object; the
                # tool result already quotes them to the model.
                data = call.arguments if call.raw_arguments is None else {}
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": data})
            add("assistant", blocks)
        elif message.content:
            add("user", [{"type": "text", "text": message.content}])
    return ("\n\n".join(system) if system else None), out


def classify(exc: BaseException) -> Failure | None:
    """What a failed Anthropic request means (see ``_retry``)."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return status_failure(exc.status_code, sdk_error_message(exc), exc.response.headers)
    if isinstance(exc, anthropic.APITimeoutError):
        return Failure("retry", "the request timed out")
    if isinstance(exc, anthropic.APIConnectionError):
        return Failure("retry", f"connection failed: {exc.__cause__ or exc}")
    if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError | BadResponse):
        return Failure("retry", f"the response is not a message: {exc}")
    return None


def _input_text(value: Any) -> str:
    """Tool input as JSON text; a string (never sent by Anthropic itself) stays verbatim."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _input_tokens(usage: Any) -> int | None:
    """Every input token of a reply's ``usage``, cache reads and writes included.

    Raises:
        ReplyRefused: a count that is not a whole number from 0 (the SDK does not check them).
    """
    tokens = reported_count(getattr(usage, "input_tokens", None), "usage.input_tokens")
    if tokens is None:
        return None
    for name in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        tokens += reported_count(getattr(usage, name, None), f"usage.{name}") or 0
    return tokens


def _output_tokens(usage: Any) -> int | None:
    return reported_count(getattr(usage, "output_tokens", None), "usage.output_tokens")


def parse_message(message: Any) -> ModelReply:
    """A ``Message`` as a neutral reply (text blocks joined; thinking blocks left out)."""
    texts: list[str] = []
    calls: list[ReplyCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(
                ReplyCall(id=block.id, name=block.name, arguments=_input_text(block.input))
            )
    usage = message.usage
    return ModelReply(
        content="".join(texts) if texts or not calls else None,
        tool_calls=calls,
        input_tokens=_input_tokens(usage),
        output_tokens=_output_tokens(usage),
        stop_reason=message.stop_reason,
    )


def _make_client(options: ChatOptions) -> AsyncAnthropic:
    """An SDK client with the run's options, its own connection pool and the body cap."""
    import anthropic

    return anthropic.AsyncAnthropic(
        api_key=options.api_key or "unused",
        base_url=options.base_url or DEFAULT_BASE_URL,
        timeout=options.timeout,
        max_retries=0,
        http_client=anthropic.DefaultAsyncHttpxClient(
            transport=capped_transport(anthropic.DefaultAsyncHttpxClient)
        ),
    )


class AnthropicMessagesAgent:
    """One episode's conversation with a Messages API model."""

    def __init__(
        self,
        model: str,
        options: ChatOptions,
        caller: ModelCaller,
        tools: list[dict[str, Any]],
        epoch: int = 0,
        shared: SharedClient[AsyncAnthropic] | None = None,
    ) -> None:
        self.model = model
        self._options = options
        self._caller = caller
        self._tools = tools
        self._offered: list[str] | None = None
        self._epoch = epoch
        self._shared = shared
        self._client: AsyncAnthropic | None = None

    def request(self, messages: list[Message]) -> dict[str, Any]:
        """The ``messages.create`` request for a transcript (without streaming)."""
        system, converted = anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._options.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": converted,
        }
        if system is not None:
            request["system"] = system
        if self._tools:
            request["tools"] = self._tools
        if self._options.temperature is not None:
            request["temperature"] = self._options.temperature
        return request

    async def act(self, observation: Observation) -> AgentTurn:
        """Ask the model for its next turn."""
        names = [t.name for t in observation.tools]
        if names != self._offered:  # a later user turn offers more tools (or the first turn)
            self._tools, self._offered = anthropic_tools(observation.tools), names
        request = self.request(observation.messages)
        # The epoch keeps the k samples of a task apart in the cache.
        keyed = {"provider": "anthropic", "epoch": self._epoch, **request}
        return await self._caller.turn(self.model, keyed, lambda: self._send(request))

    async def _send(self, request: dict[str, Any]) -> ModelReply:
        args = {k: v for k, v in request.items() if k not in _BODY_ONLY}
        extra = {k: request[k] for k in _BODY_ONLY if k in request}
        if extra:
            args["extra_body"] = extra
        try:
            if self._options.stream:
                return await self._send_stream(args)
            message = await self._use().messages.create(**args)
        except Exception as exc:  # a body over the cap, under the SDK's connection error
            big = too_large(exc)
            if big is not None:
                raise big from None
            raise
        return parse_message(message)

    async def _send_stream(self, args: dict[str, Any]) -> ModelReply:
        stream = await self._use().messages.create(**args, stream=True)
        blocks: dict[int, dict[str, str]] = {}
        input_tokens: int | None = None
        output_tokens: int | None = None
        stop: str | None = None
        async with stream:
            async for event in stream:
                if event.type == "message_start":
                    input_tokens = _input_tokens(event.message.usage)
                elif event.type == "content_block_start":
                    block = event.content_block
                    blocks[event.index] = {
                        "type": block.type,
                        "id": getattr(block, "id", ""),
                        "name": getattr(block, "name", ""),
                        "text": getattr(block, "text", "") or "",
                        "json": "",
                        "input": _input_text(getattr(block, "input", {}) or {}),
                    }
                elif event.type == "content_block_delta" and event.index in blocks:
                    delta = event.delta
                    if delta.type == "text_delta":
                        blocks[event.index]["text"] += delta.text
                    elif delta.type == "input_json_delta":
                        blocks[event.index]["json"] += delta.partial_json
                elif event.type == "message_delta":
                    output_tokens = _output_tokens(event.usage)
                    input_tokens = _input_tokens(event.usage) or input_tokens
                    stop = event.delta.stop_reason or stop
        ordered = [blocks[i] for i in sorted(blocks)]
        texts = [b["text"] for b in ordered if b["type"] == "text"]
        calls = [
            ReplyCall(id=b["id"], name=b["name"], arguments=b["json"] or b["input"])
            for b in ordered
            if b["type"] == "tool_use"
        ]
        return ModelReply(
            content="".join(texts) if texts or not calls else None,
            tool_calls=calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            stop_reason=stop,
        )

    def _use(self) -> AsyncAnthropic:
        """The run's shared client (the first call takes it; :meth:`aclose` gives it back)."""
        if self._client is None:
            shared = self._shared
            self._client = shared.acquire() if shared is not None else _make_client(self._options)
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        client, self._client = self._client, None
        if client is not None and self._shared is not None:
            await self._shared.release(client)
        elif client is not None:
            await client.close()


@agent("anthropic")
def build(spec: AgentSpec) -> AgentFactory:
    """``anthropic:MODEL``; checks the options and the SDK once per run.

    Raises:
        SpecError: no model, a bad option, no SDK, or no API key for api.anthropic.com.
    """
    model = require_target(spec, "anthropic:claude-sonnet-4-5")
    options = parse_options(ChatOptions, spec)
    require_sdk("anthropic", "anthropic")
    problems = []
    if options.seed is not None:
        problems.append(
            Problem(
                None, None, "--agent-arg seed", "the Anthropic Messages API has no seed; drop it"
            )
        )
    if options.api_key is None and options.base_url is None:
        problems.append(
            Problem(
                None,
                None,
                "--agent-arg api_key",
                f"{spec.label} needs an API key: set ANTHROPIC_API_KEY, or pass "
                "--agent-arg api_key=... (or base_url=... for another endpoint)",
            )
        )
    if problems:
        raise SpecError(problems)
    caller = ModelCaller(spec.label, options, classify, PriceTable.load(options.prices))

    shared: SharedClient[AsyncAnthropic] = SharedClient(lambda: _make_client(options))

    def factory(ctx: EpisodeContext) -> AnthropicMessagesAgent:
        return AnthropicMessagesAgent(
            model, options, caller, anthropic_tools(ctx.tools), ctx.epoch, shared=shared
        )

    return factory
