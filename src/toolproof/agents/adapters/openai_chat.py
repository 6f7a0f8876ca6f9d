"""``openai:MODEL``: a model behind the OpenAI Chat Completions API, via the ``openai`` SDK.

Works with OpenAI and any compatible endpoint (``--agent-arg base_url=...``).
Each turn sends the whole transcript with the episode's tools as function
tools; every tool call of the reply (parallel calls included) becomes one
:class:`~toolproof.agents.AgentTurn`. Arguments that are not a JSON object are
passed on raw, so the gateway answers ``invalid_arguments`` and the model can
try again; unknown tool names pass through to an ``unknown_tool`` result.

Options (``--agent-arg``): ``base_url``, ``api_key``, ``temperature``, ``seed``,
``max_tokens``, ``stream``, ``timeout``, ``max_retries``, ``backoff_base``,
``backoff_max``, ``prices``, ``cache``.
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
from ._reply import ModelReply, ReplyCall, arguments_text, reported_count
from ._retry import BadResponse, Failure, sdk_error_message, status_failure
from ._schemas import openai_tools
from ._shared_client import SharedClient

if TYPE_CHECKING:
    from openai import AsyncOpenAI

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """A toolproof transcript as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content or "",
                }
            )
        elif message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments_text(call)},
                    }
                    for call in message.tool_calls
                ]
            elif message.content is None:
                item["content"] = ""
            out.append(item)
        else:
            out.append({"role": message.role, "content": message.content or ""})
    return out


def classify(exc: BaseException) -> Failure | None:
    """What a failed OpenAI request means (see ``_retry``)."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return status_failure(exc.status_code, sdk_error_message(exc), exc.response.headers)
    if isinstance(exc, openai.APITimeoutError):
        return Failure("retry", "the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return Failure("retry", f"connection failed: {exc.__cause__ or exc}")
    if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError | BadResponse):
        return Failure("retry", f"the response is not a chat completion: {exc}")
    return None


def parse_completion(completion: Any) -> ModelReply:
    """A ``ChatCompletion`` as a neutral reply.

    Raises:
        BadResponse: the completion has no choices.
    """
    if not completion.choices:
        raise BadResponse("the completion has no choices")
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ReplyCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
    prompt, completion_tokens = _counts(completion.usage)
    return ModelReply(
        content=message.content if message.content is not None else message.refusal,
        tool_calls=calls,
        input_tokens=prompt,
        output_tokens=completion_tokens,
        stop_reason=choice.finish_reason,
    )


def _counts(usage: Any) -> tuple[int | None, int | None]:
    """The prompt and completion tokens of a reply's ``usage`` (the SDK does not check
    them: a server may send any JSON there), through the ingress for agent bytes.

    Raises:
        ReplyRefused: a count that is not a whole number from 0 (an agent_error).
    """
    if usage is None:
        return None, None
    return (
        reported_count(getattr(usage, "prompt_tokens", None), "usage.prompt_tokens"),
        reported_count(getattr(usage, "completion_tokens", None), "usage.completion_tokens"),
    )


def _make_client(options: ChatOptions) -> AsyncOpenAI:
    """An SDK client with the run's options, its own connection pool and the body cap."""
    import openai

    return openai.AsyncOpenAI(
        api_key=options.api_key or "unused",
        base_url=options.base_url or DEFAULT_BASE_URL,
        timeout=options.timeout,
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(
            transport=capped_transport(openai.DefaultAsyncHttpxClient)
        ),
    )


class OpenAIChatAgent:
    """One episode's conversation with a Chat Completions model."""

    def __init__(
        self,
        model: str,
        options: ChatOptions,
        caller: ModelCaller,
        tools: list[dict[str, Any]],
        epoch: int = 0,
        shared: SharedClient[AsyncOpenAI] | None = None,
    ) -> None:
        self.model = model
        self._options = options
        self._caller = caller
        self._tools = tools
        self._offered: list[str] | None = None
        self._epoch = epoch
        self._shared = shared
        self._client: AsyncOpenAI | None = None

    def request(self, messages: list[Message]) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for a transcript (without streaming)."""
        request: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages)}
        if self._tools:
            request["tools"] = self._tools
        if self._options.temperature is not None:
            request["temperature"] = self._options.temperature
        if self._options.seed is not None:
            request["seed"] = self._options.seed
        if self._options.max_tokens is not None:
            request["max_completion_tokens"] = self._options.max_tokens
        return request

    async def act(self, observation: Observation) -> AgentTurn:
        """Ask the model for its next turn."""
        names = [t.name for t in observation.tools]
        if names != self._offered:  # a later user turn offers more tools (or the first turn)
            self._tools, self._offered = openai_tools(observation.tools), names
        request = self.request(observation.messages)
        # The epoch keeps the k samples of a task apart in the cache.
        keyed = {"provider": "openai", "epoch": self._epoch, **request}
        return await self._caller.turn(self.model, keyed, lambda: self._send(request))

    async def _send(self, request: dict[str, Any]) -> ModelReply:
        try:
            if self._options.stream:
                return await self._send_stream(request)
            completion = await self._use().chat.completions.create(**request)
        except Exception as exc:  # a body over the cap, under the SDK's connection error
            big = too_large(exc)
            if big is not None:
                raise big from None
            raise
        return parse_completion(completion)

    async def _send_stream(self, request: dict[str, Any]) -> ModelReply:
        stream = await self._use().chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: Any = None
        finish: str | None = None
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                    for part in delta.tool_calls or []:
                        slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                        slot["id"] = part.id or slot["id"]
                        if part.function is not None:
                            slot["name"] += part.function.name or ""
                            slot["arguments"] += part.function.arguments or ""
        prompt, completion_tokens = _counts(usage)
        return ModelReply(
            content="".join(text) if text or not calls else None,
            tool_calls=[ReplyCall(**calls[i]) for i in sorted(calls)],
            input_tokens=prompt,
            output_tokens=completion_tokens,
            stop_reason=finish,
        )

    def _use(self) -> AsyncOpenAI:
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


@agent("openai")
def build(spec: AgentSpec) -> AgentFactory:
    """``openai:MODEL``; checks the options and the SDK once per run.

    Raises:
        SpecError: no model, a bad option, no SDK, or no API key for api.openai.com.
    """
    model = require_target(spec, "openai:gpt-4o")
    options = parse_options(ChatOptions, spec)
    require_sdk("openai", "openai")
    if options.api_key is None and options.base_url is None:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "--agent-arg api_key",
                    f"{spec.label} needs an API key: set OPENAI_API_KEY, or pass "
                    "--agent-arg api_key=... (or base_url=... for a local server)",
                )
            ]
        )
    caller = ModelCaller(spec.label, options, classify, PriceTable.load(options.prices))

    shared: SharedClient[AsyncOpenAI] = SharedClient(lambda: _make_client(options))

    def factory(ctx: EpisodeContext) -> OpenAIChatAgent:
        return OpenAIChatAgent(
            model, options, caller, openai_tools(ctx.tools), ctx.epoch, shared=shared
        )

    return factory
