"""``litellm:MODEL``: any provider LiteLLM reaches (Gemini, Bedrock, Azure, Vertex, Ollama,
vLLM, Together, ...), by LiteLLM's model names (``gemini/gemini-2.0-flash``,
``bedrock/anthropic.claude-3-haiku-20240307-v1:0``, ``azure/DEPLOYMENT``).

Harness-driven like ``openai:``: each turn sends the transcript and the episode's tools
in the OpenAI shape through ``litellm.acompletion``, which translates for the provider.
Everything else is toolproof's, shared with ``openai:``: retries (LiteLLM's own are off),
the cache (``--cache``), the ingress every reply passes (``ModelCaller``: text, counts,
tool calls), and prices (toolproof's table first, then LiteLLM's shipped one, logged as
such: :class:`~._litellm.LiteLLMPrices`). Keys come from the provider's usual variables,
which LiteLLM reads (``GEMINI_API_KEY``, ``AWS_*``, ``AZURE_API_KEY``, ...), or
``--agent-arg api_key``; ``base_url`` is LiteLLM's ``api_base``.

Options (``--agent-arg``): those of ``openai:`` except ``stream`` (replies are whole).
"""

from __future__ import annotations

from typing import Any

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import ingress

from ..base import AgentFactory, AgentSpec, AgentTurn, EpisodeContext, Observation, agent
from ..limits import AgentFault
from ._caller import ModelCaller
from ._cost import PriceTable
from ._litellm import LiteLLMPrices, classify, import_litellm, require_litellm
from ._options import ChatOptions, parse_options, require_target
from ._reply import ModelReply, ReplyCall
from ._retry import BadResponse
from ._schemas import openai_tools
from .openai_chat import OpenAIChatAgent


def _count(usage: Any, name: str) -> int | None:
    """A token count of the reply's usage, through the ingress (``None``: not reported)."""
    value = getattr(usage, name, None) if usage is not None else None
    if value is None:
        return None
    try:
        return ingress.count(value, f"usage.{name}")
    except ingress.IngressError as exc:
        raise AgentFault(str(exc)) from None


def parse_response(response: Any) -> ModelReply:
    """LiteLLM's ``ModelResponse`` (the OpenAI shape) as a neutral reply.

    Raises:
        BadResponse: the response has no choices.
        AgentFault: a token count that is not a whole number from 0.
    """
    choices = getattr(response, "choices", None)
    if not choices:
        raise BadResponse("the completion has no choices")
    choice = choices[0]
    message = choice.message
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is None:
            continue
        calls.append(
            ReplyCall(
                id=call.id or "",
                name=function.name or "",
                arguments=function.arguments or "",
            )
        )
    content = getattr(message, "content", None)
    if content is None:
        content = getattr(message, "refusal", None)
    usage = getattr(response, "usage", None)
    return ModelReply(
        content=content,
        tool_calls=calls,
        input_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
        stop_reason=getattr(choice, "finish_reason", None),
    )


class LiteLLMChatAgent(OpenAIChatAgent):
    """One episode's conversation with a model through ``litellm.acompletion``."""

    async def act(self, observation: Observation) -> AgentTurn:
        """Ask the model for its next turn (cached under ``provider: litellm``)."""
        names = [t.name for t in observation.tools]
        if names != self._offered:
            self._tools, self._offered = openai_tools(observation.tools), names
        request = self.request(observation.messages)
        keyed = {"provider": "litellm", "epoch": self._epoch, **request}
        return await self._caller.turn(self.model, keyed, lambda: self._send(request))

    async def _send(self, request: dict[str, Any]) -> ModelReply:
        litellm = import_litellm()
        extra: dict[str, Any] = {"num_retries": 0, "timeout": self._options.timeout}
        if self._options.base_url:
            extra["api_base"] = self._options.base_url
        if self._options.api_key:
            extra["api_key"] = self._options.api_key
        return parse_response(await litellm.acompletion(**request, **extra))

    async def aclose(self) -> None:
        """Nothing to close: LiteLLM keeps its own clients."""


@agent("litellm")
def build(spec: AgentSpec) -> AgentFactory:
    """``litellm:MODEL``; checks the options and that LiteLLM is installed, once per run.

    Raises:
        SpecError: no model, a bad option (``stream``), or no litellm package.
    """
    model = require_target(spec, "litellm:gemini/gemini-2.0-flash")
    options = parse_options(ChatOptions, spec)
    if options.stream:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "--agent-arg stream",
                    f"{spec.label} takes whole replies; drop stream=true",
                )
            ]
        )
    require_litellm()  # here, once: its first import is slow
    prices = LiteLLMPrices(PriceTable.load(options.prices).prices)
    prices.price(model)  # look it up now: the note on a borrowed price comes before the run
    caller = ModelCaller(spec.label, options, classify, prices)

    def factory(ctx: EpisodeContext) -> LiteLLMChatAgent:
        return LiteLLMChatAgent(model, options, caller, openai_tools(ctx.tools), ctx.epoch)

    return factory
