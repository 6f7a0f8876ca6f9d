"""``llamaindex:module:factory``: a LlamaIndex agent that owns its loop.

The factory contract (see docs/evaluate-your-agent.md, "LlamaIndex")::

    def make_agent(tools: list[FunctionTool], *, system_prompt: str, **options) -> agent

``tools`` are the task's tools as LlamaIndex ``FunctionTool``s (async; the
model sees the task's JSON Schema as declared; each call goes through the
episode's gateway and is recorded). ``options`` are the run's ``--agent-arg``
values it declares, and its model settings (``model``, ``base_url``: the episode's
model gateway URL, ``api_key``: a placeholder, ``provider``) when it declares them.
The factory may be ``async`` or return an async context manager.

The agent is a workflow agent (``FunctionAgent``, ``ReActAgent``,
``CodeActAgent`` or an ``AgentWorkflow``): it is run with
``agent.run(user_msg=prompt)`` and its final response is the answer. Token
usage and cost are recorded by the model gateway, whatever the provider.
"""

from __future__ import annotations

from typing import Any, ClassVar

from toolproof.trajectory import ToolSchema

from ..base import AgentFactory, AgentSpec, ToolSession, agent
from ..builtin._own_thread import own_thread_factory
from ._tools_bridge import FrameworkAgent, build_framework, open_args_model

MAX_ITERATIONS = 200
"""Agent iterations allowed; the episode's step and time limits are the real bounds."""


def function_tool(session: ToolSession, schema: ToolSchema) -> Any:
    """One task tool as a LlamaIndex ``FunctionTool`` whose calls go through the session."""
    from llama_index.core.tools import FunctionTool

    name = schema.name

    async def call(**arguments: Any) -> str:
        result = await session.call_tool(name, arguments)
        return result.content

    return FunctionTool.from_defaults(
        async_fn=call,
        name=name,
        description=schema.description,
        fn_schema=open_args_model(schema),
    )


class LlamaIndexAgent(FrameworkAgent):
    """Runs a user's LlamaIndex workflow agent on one episode."""

    kind: ClassVar[str] = "llamaindex"

    def make_tools(self, session: ToolSession) -> list[Any]:
        """The task's tools as ``FunctionTool``s."""
        return [function_tool(session, schema) for schema in session.tools]

    async def invoke(self, agent: Any, session: ToolSession) -> str:
        """Run the workflow with the prompt (its model calls are recorded by the gateway)."""
        if not hasattr(agent, "run"):
            raise TypeError(
                f"the factory of {self.label} returned {type(agent).__name__}, not a LlamaIndex "
                "workflow agent (FunctionAgent, ReActAgent, AgentWorkflow); it has no run()"
            )
        handler = agent.run(user_msg=session.prompt, max_iterations=MAX_ITERATIONS)
        async for _event in handler.stream_events():
            pass  # drained, so the workflow runs to its end
        output = await handler
        response = getattr(output, "response", output)
        content = getattr(response, "content", response)
        return "" if content is None else str(content)


@agent("llamaindex")
def build(spec: AgentSpec) -> AgentFactory:
    """``llamaindex:module:factory``; needs ``pip install 'toolproof[llamaindex]'``."""
    made = build_framework(spec, LlamaIndexAgent, modules=("llama_index.core",), extra="llamaindex")
    return own_thread_factory(made, spec.label)  # its code cannot block the harness
