"""``langchain:module:factory``: a LangChain or LangGraph agent that owns its loop.

The factory contract (see docs/evaluate-your-agent.md, "LangChain/LangGraph")::

    def make_agent(tools: list[StructuredTool], *, system_prompt: str, **options) -> Runnable

``tools`` are the task's tools as ``StructuredTool``s (the task's JSON Schema as
``args_schema``; each call goes through the episode's gateway and is recorded).
``options`` are the keywords the factory declares among ``model``, ``base_url``
(the episode's model gateway URL), ``api_key`` (a placeholder: the gateway holds
the real key), ``provider`` and the run's other ``--agent-arg`` values. The
factory may also be ``async`` or return an async context manager that yields
the runnable (to close a model client at the end of the episode).

The runnable is invoked with ``{"messages": [("user", prompt)]}``, the input of
LangGraph's message-state agents; the answer is the text of the last AI message
of the output (or the output itself when it is a message or a string). Token
usage and cost are recorded by the model gateway, call by call.
"""

from __future__ import annotations

from typing import Any, ClassVar

from toolproof.trajectory import ToolSchema

from ..base import AgentFactory, AgentSpec, ToolSession, agent
from ..builtin._own_thread import own_thread_factory
from ._tools_bridge import FrameworkAgent, build_framework

RECURSION_LIMIT = 200
"""LangGraph supersteps allowed; the episode's step and time limits are the real bounds."""


def message_text(message: Any) -> str:
    """The text of a LangChain message (string content, or the text blocks of a list)."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        ]
        return "".join(parts)
    return str(content)


def final_answer(output: Any) -> str:
    """The answer in a runnable's output: the last AI message, a message, or a string."""
    from langchain_core.messages import AIMessage, BaseMessage

    if isinstance(output, dict) and "messages" in output:
        for message in reversed(output["messages"]):
            if isinstance(message, AIMessage):
                return message_text(message)
        raise ValueError("the agent's output holds no AI message")
    if isinstance(output, BaseMessage):
        return message_text(output)
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("output"), str):
        return str(output["output"])
    raise TypeError(
        f"cannot find an answer in the agent's output of type {type(output).__name__}; "
        "return a LangGraph agent (output {'messages': [...]}), a message or a string"
    )


def structured_tool(session: ToolSession, schema: ToolSchema) -> Any:
    """One task tool as a LangChain ``StructuredTool`` whose calls go through the session."""
    from langchain_core.tools import StructuredTool, ToolException

    name = schema.name

    async def call(**arguments: Any) -> str:
        result = await session.call_tool(name, arguments)
        if result.is_error:
            raise ToolException(result.content)  # shown to the model, status "error"
        return result.content

    return StructuredTool.from_function(
        coroutine=call,
        name=name,
        description=schema.description,
        args_schema=dict(schema.parameters),
        handle_tool_error=True,
    )


class LangChainAgent(FrameworkAgent):
    """Runs a user's LangChain/LangGraph runnable on one episode."""

    kind: ClassVar[str] = "langchain"

    def make_tools(self, session: ToolSession) -> list[Any]:
        """The task's tools as ``StructuredTool``s."""
        return [structured_tool(session, schema) for schema in session.tools]

    async def invoke(self, agent: Any, session: ToolSession) -> str:
        """``ainvoke`` the runnable with the prompt; the last AI message is the answer."""
        if not hasattr(agent, "ainvoke"):
            raise TypeError(
                f"the factory of {self.label} returned {type(agent).__name__}, not a runnable "
                "(e.g. a LangGraph agent); it has no ainvoke()"
            )
        config = {"recursion_limit": RECURSION_LIMIT}
        output = await agent.ainvoke({"messages": [("user", session.prompt)]}, config=config)
        return final_answer(output)


@agent("langchain")
def build(spec: AgentSpec) -> AgentFactory:
    """``langchain:module:factory``; needs ``pip install 'toolproof[langchain]'``."""
    made = build_framework(spec, LangChainAgent, modules=("langchain_core",), extra="langchain")
    return own_thread_factory(made, spec.label)  # its code cannot block the harness
