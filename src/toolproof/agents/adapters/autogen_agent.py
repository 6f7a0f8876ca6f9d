"""``autogen:module:factory``: an AutoGen (autogen-agentchat) agent or team that owns its loop.

The factory contract (see docs/evaluate-your-agent.md, "AutoGen")::

    def make_agent(tools: list[BaseTool], *, system_prompt: str, **options) -> agent

``tools`` are the task's tools as AutoGen tools (``autogen_core.tools.BaseTool``,
what ``AssistantAgent(tools=...)`` takes; the model sees the task's JSON Schema
as declared; each call goes through the episode's gateway and is recorded).
``options`` are the keywords it declares among ``model``, ``base_url`` (the
episode's model gateway URL), ``api_key`` (a placeholder), ``provider`` and the
run's other ``--agent-arg`` values. The factory may be ``async``
or return an async context manager that yields the agent, which is how it
closes its model client (``await model_client.close()``) when the episode ends.

The agent (an ``AssistantAgent``, or any agent or team with ``run_stream``) is
run with ``run_stream(task=prompt)``; the answer is the text of the last chat
message not sent by the user, or, with ``--agent-arg answer_agent=NAME``, of the
last message that agent sent (a team's reviewer often has the last word,
``TERMINATE``). ``answer_agent`` is toolproof's and is not passed to the factory.
Token usage and cost are recorded by the model gateway.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, cast

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import ToolSchema

from ..base import AgentFactory, AgentSpec, EpisodeContext, ToolSession, agent
from ..builtin._own_thread import own_thread_factory
from ._tools_bridge import (
    FrameworkAgent,
    arguments_of,
    build_framework,
    open_args_model,
)


def autogen_tool(session: ToolSession, schema: ToolSchema) -> Any:
    """One task tool as an AutoGen ``BaseTool`` whose calls go through the session."""
    from autogen_core import CancellationToken
    from autogen_core.tools import BaseTool, ParametersSchema
    from autogen_core.tools import ToolSchema as AutoGenToolSchema
    from pydantic import BaseModel

    args_model = open_args_model(schema)

    class TaskTool(BaseTool[BaseModel, Any]):
        """A task tool: the declared schema, every call through the episode's gateway."""

        def __init__(self) -> None:
            super().__init__(args_model, str, schema.name, schema.description)

        @property
        def schema(self) -> AutoGenToolSchema:
            return AutoGenToolSchema(
                name=schema.name,
                description=schema.description,
                # verbatim, not rebuilt from a model (which would drop keywords it does not know)
                parameters=cast(ParametersSchema, dict(schema.parameters)),
                strict=False,
            )

        async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> str:
            result = await session.call_tool(schema.name, arguments_of(args))
            return result.content

    return TaskTool()


def _text(message: Any) -> str:
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    to_text = getattr(message, "to_text", None)
    return str(to_text()) if callable(to_text) else str(content)


class AutoGenAgent(FrameworkAgent):
    """Runs a user's AutoGen agent or team on one episode."""

    kind: ClassVar[str] = "autogen"
    answer_agent: str | None = None
    """The agent (``source``) whose last message is the answer; None: the last message's."""

    def make_tools(self, session: ToolSession) -> list[Any]:
        """The task's tools as AutoGen tools."""
        return [autogen_tool(session, schema) for schema in session.tools]

    async def invoke(self, agent: Any, session: ToolSession) -> str:
        """``run_stream`` the agent on the prompt (its model calls are recorded by the gateway)."""
        from autogen_agentchat.base import TaskResult
        from autogen_agentchat.messages import BaseChatMessage

        if not hasattr(agent, "run_stream"):
            raise TypeError(
                f"the factory of {self.label} returned {type(agent).__name__}, not an AutoGen "
                "agent or team; it has no run_stream()"
            )
        result: TaskResult | None = None
        async for item in agent.run_stream(task=session.prompt):
            if isinstance(item, TaskResult):
                result = item
                continue
        if result is None:
            raise RuntimeError(f"{self.label}: run_stream() ended without a TaskResult")
        chat = [m for m in result.messages if isinstance(m, BaseChatMessage)]
        wanted = self.answer_agent
        for message in reversed(chat):
            if message.source != "user" and wanted in (None, message.source):
                return _text(message)
        if wanted is not None:
            seen = ", ".join(sorted({m.source for m in chat if m.source != "user"})) or "none"
            raise RuntimeError(
                f"{self.label}: no message from answer_agent {wanted!r}; agents that spoke: "
                f"{seen} (check --agent-arg answer_agent against the agents' names)"
            )
        return ""


@agent("autogen")
def build(spec: AgentSpec) -> AgentFactory:
    """``autogen:module:factory``; needs ``pip install 'toolproof[autogen]'``."""
    answer_agent = spec.options.get("answer_agent")
    if answer_agent is not None and (not isinstance(answer_agent, str) or not answer_agent):
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "--agent-arg answer_agent",
                    f"must be the name of an agent of the team, got {answer_agent!r}",
                )
            ]
        )
    rest = {k: v for k, v in spec.options.items() if k != "answer_agent"}  # not the factory's
    made = build_framework(
        dataclasses.replace(spec, options=rest),
        AutoGenAgent,
        modules=("autogen_agentchat", "autogen_core"),
        extra="autogen",
    )

    def named(ctx: EpisodeContext) -> Any:
        built = cast(AutoGenAgent, made(ctx))
        built.answer_agent = answer_agent
        return built

    return own_thread_factory(named, spec.label)  # its code cannot block the harness
