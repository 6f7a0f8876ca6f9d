"""A LangGraph agent for toolproof: ``--agent langchain:langgraph_agent:make_agent``.

The graph is the classic tool loop: the model answers or asks for tools, the
tools run, the model sees the results. toolproof supplies the task's tools
(each call is validated and recorded) and the system prompt; everything else
is ordinary LangGraph code.

Run it on the core suite against any OpenAI-compatible endpoint::

    toolproof run core --agent langchain:langgraph_agent:make_agent \
        --agent-arg model=gpt-4o-mini  # --agent-arg base_url=http://localhost:8000/v1

(run from ``examples/``, or put it on ``PYTHONPATH``). Needs
``pip install 'toolproof[langchain]'``.
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
    """Build the graph for one episode, and close its HTTP client afterwards.

    Args:
        tools: The task's tools, as LangChain ``StructuredTool``s.
        system_prompt: The suite's system prompt.
        model: The chat model (``--agent-arg model=...``).
        base_url: An OpenAI-compatible endpoint; the provider's when None.
        api_key: The key; ``OPENAI_API_KEY`` when None.
        provider: ``anthropic`` builds a ``ChatAnthropic`` (``--model anthropic:claude-...``;
            needs ``langchain-anthropic``); otherwise a ``ChatOpenAI``.

    Yields:
        A compiled LangGraph graph whose state is ``{"messages": [...]}``.
    """
    from langchain_core.messages import SystemMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    llm, close = _chat_model(provider, model, base_url, api_key)
    llm_with_tools = llm.bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        reply = await llm_with_tools.ainvoke([SystemMessage(system_prompt), *state["messages"]])
        return {"messages": [reply]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    try:
        yield graph.compile()
    finally:
        await close()


def _chat_model(
    provider: str, model: str, base_url: str | None, api_key: str | None
) -> tuple[Any, Any]:
    """The provider's own LangChain chat model, and how to close its connections."""
    if provider == "anthropic":
        from langchain_anthropic import ChatAnthropic

        llm = ChatAnthropic(
            model_name=model,
            base_url=base_url,
            api_key=api_key,
            max_retries=0,
            max_tokens=1024,
            timeout=None,
            stop=None,
        )

        async def close_anthropic() -> None:
            client = llm.__dict__.get("_async_client")  # made on first use, then kept
            if client is not None:
                await client.close()

        return llm, close_anthropic
    import openai
    from langchain_openai import ChatOpenAI

    http_client = openai.DefaultAsyncHttpxClient()  # this episode's connections
    chat = ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        http_async_client=http_client,
    )
    return chat, http_client.aclose
