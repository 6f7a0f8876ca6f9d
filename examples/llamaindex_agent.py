"""A LlamaIndex agent for toolproof: ``--agent llamaindex:llamaindex_agent:make_agent``.

A ``FunctionAgent`` with an OpenAI model: toolproof supplies the task's tools
(as ``FunctionTool``s; each call is validated and recorded) and the system
prompt; the rest is ordinary LlamaIndex code::

    toolproof run core --agent llamaindex:llamaindex_agent:make_agent \
        --agent-arg model=gpt-4o-mini

(run from ``examples/``, or put it on ``PYTHONPATH``). Needs
``pip install 'toolproof[llamaindex]'``.

A model that is not OpenAI's (a local one: ``--model ollama:qwen2.5:7b``, ``vllm:...``,
``openai-compatible:NAME@URL``, or ``litellm:...``) goes through LlamaIndex's ``OpenAILike``:
its ``OpenAI`` class accepts only OpenAI's model names and fails with "Unknown model" for
any other, which would be recorded as the agent's error.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def make_agent(
    tools: list[Any],
    *,
    system_prompt: str,
    model: str = "gpt-4o-mini",
    base_url: str | None = None,
    api_key: str | None = None,
    provider: str = "openai",
) -> AsyncIterator[Any]:
    """Build the agent for one episode, and close its HTTP client afterwards.

    Args:
        tools: The task's tools, as LlamaIndex ``FunctionTool``s.
        system_prompt: The suite's system prompt.
        model: An OpenAI chat model LlamaIndex knows (``--agent-arg model=...``).
        base_url: An OpenAI-compatible endpoint; the provider's when None.
        api_key: The key; ``OPENAI_API_KEY`` when None.
        provider: ``anthropic`` uses LlamaIndex's ``Anthropic`` LLM (``--model
            anthropic:claude-...``; needs ``llama-index-llms-anthropic``); ``openai`` its
            ``OpenAI``; any other (``openai-compatible``, ``ollama``, ``vllm``, ``litellm``)
            its ``OpenAILike`` (needs ``llama-index-llms-openai-like``), which takes any
            model name.

    Yields:
        A ``FunctionAgent``.
    """
    from llama_index.core.agent.workflow import FunctionAgent

    llm, close = _llm(provider, model, base_url, api_key)
    try:
        yield FunctionAgent(tools=tools, llm=llm, system_prompt=system_prompt)
    finally:
        await close()


def _llm(provider: str, model: str, base_url: str | None, api_key: str | None) -> tuple[Any, Any]:
    """The provider's own LlamaIndex LLM, and how to close its connections."""
    if provider == "anthropic":
        from llama_index.llms.anthropic import Anthropic

        claude = Anthropic(model=model, base_url=base_url, api_key=api_key, max_retries=0)
        return claude, claude._aclient.close  # its async client: no public handle to close it
    import openai

    http_client = openai.DefaultAsyncHttpxClient()  # this episode's connections
    settings: dict[str, Any] = {
        "model": model,
        "api_base": base_url,
        "api_key": api_key,
        "max_retries": 0,
        "additional_kwargs": {"stream_options": {"include_usage": True}},
        "async_http_client": http_client,
    }
    if provider == "openai":
        from llama_index.llms.openai import OpenAI

        return OpenAI(**settings), http_client.aclose
    # Any other model name: OpenAI would refuse it ("Unknown model ...").
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(
        **settings,
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=32768,
    )
    return llm, http_client.aclose
