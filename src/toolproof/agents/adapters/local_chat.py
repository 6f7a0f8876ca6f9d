"""``ollama:MODEL`` and ``vllm:MODEL``: a local open model behind an OpenAI-compatible server.

The ``openai:`` adapter (same SDK, retries, cache, ingress) pointed at the server's
usual local address (:data:`~._local.LOCAL_BASE_URLS`: Ollama on port 11434, vLLM on
8000); ``--agent-arg base_url=...`` points it elsewhere, ``api_key`` is sent when given
(``vllm serve --api-key``). A local server charges nothing per token, so a model
without an entry in the price table costs $0 (not "unpriced"); a ``prices`` file with
the model's name sets your own cost per million tokens. See docs/local-models.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import AgentFactory, AgentSpec, EpisodeContext, agent
from ._caller import ModelCaller
from ._cost import PriceTable
from ._local import LOCAL_BASE_URLS, LocalPrices
from ._options import ChatOptions, parse_options, require_sdk, require_target
from ._schemas import openai_tools
from ._shared_client import SharedClient
from .openai_chat import OpenAIChatAgent, _make_client, classify

if TYPE_CHECKING:
    from openai import AsyncOpenAI


def build_local(spec: AgentSpec, kind: str) -> AgentFactory:
    """The factory of a local server's model (``kind``: ``ollama`` or ``vllm``).

    Raises:
        SpecError: no model, a bad option, or no openai SDK.
    """
    model = require_target(spec, f"{kind}:qwen2.5:7b" if kind == "ollama" else f"{kind}:MODEL")
    options = parse_options(ChatOptions, spec)
    require_sdk("openai", "openai")
    if options.base_url is None:
        options = options.model_copy(update={"base_url": LOCAL_BASE_URLS[kind]})
    prices = LocalPrices(PriceTable.load(options.prices).prices)
    caller = ModelCaller(spec.label, options, classify, prices)
    shared: SharedClient[AsyncOpenAI] = SharedClient(lambda: _make_client(options))

    def factory(ctx: EpisodeContext) -> OpenAIChatAgent:
        return OpenAIChatAgent(
            model, options, caller, openai_tools(ctx.tools), ctx.epoch, shared=shared
        )

    return factory


@agent("ollama")
def build_ollama(spec: AgentSpec) -> AgentFactory:
    """``ollama:MODEL`` (e.g. ``ollama:qwen2.5:7b``) on ``http://localhost:11434/v1``."""
    return build_local(spec, "ollama")


@agent("vllm")
def build_vllm(spec: AgentSpec) -> AgentFactory:
    """``vllm:MODEL`` (the name ``vllm serve`` serves) on ``http://localhost:8000/v1``."""
    return build_local(spec, "vllm")
