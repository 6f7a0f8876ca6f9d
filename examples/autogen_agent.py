"""An AutoGen agent for toolproof: ``--agent autogen:autogen_agent:make_agent``.

An ``AssistantAgent`` with an OpenAI model client: toolproof supplies the
task's tools (as AutoGen tools; each call is validated and recorded) and the
system prompt; the rest is ordinary AutoGen code::

    toolproof run core --agent autogen:autogen_agent:make_agent \
        --agent-arg model=gpt-4o-mini

(run from ``examples/``, or put it on ``PYTHONPATH``). Needs
``pip install 'toolproof[autogen]'``.
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
    max_tool_iterations: int = 20,
    provider: str = "openai",
) -> AsyncIterator[Any]:
    """Build the agent for one episode, and close its model client afterwards.

    Args:
        tools: The task's tools, as AutoGen tools.
        system_prompt: The suite's system prompt.
        model: The chat model (``--agent-arg model=...``).
        base_url: An OpenAI-compatible endpoint; the provider's when None.
        api_key: The key; ``OPENAI_API_KEY`` when None.
        max_tool_iterations: Tool-call rounds before the agent must answer.
        provider: ``anthropic`` uses ``AnthropicChatCompletionClient`` (``--model
            anthropic:claude-...``; needs ``autogen-ext[anthropic]``); otherwise
            ``OpenAIChatCompletionClient``.

    Yields:
        An ``AssistantAgent``.
    """
    from autogen_agentchat.agents import AssistantAgent

    options: dict[str, Any] = {"model": model, "max_retries": 0}
    if base_url is not None:
        options["base_url"] = base_url
    if api_key is not None:
        options["api_key"] = api_key
    if provider == "anthropic":
        from autogen_ext.models.anthropic import AnthropicChatCompletionClient

        # Every Claude model since Claude 3 calls tools, but AutoGen 0.7.5 matches names it
        # does not list (claude-haiku-4-5, ...) to claude-2.0 by prefix, which has no tools.
        options["model_info"] = {
            "vision": True,
            "function_calling": True,
            "json_output": True,
            "family": "unknown",
            "structured_output": False,
        }
        client: Any = AnthropicChatCompletionClient(**options)
    else:
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        client = OpenAIChatCompletionClient(**options)
    try:
        yield AssistantAgent(
            "assistant",
            model_client=client,
            tools=tools,
            system_message=system_prompt,
            max_tool_iterations=max_tool_iterations,
        )
    finally:
        await client.close()
