"""What the agent-driven framework adapters share (LangChain, LlamaIndex, AutoGen).

The user writes one factory per framework; the adapter does the rest::

    spec "KIND:module:factory" ──build_framework──▶ per-episode FrameworkAgent
    FrameworkAgent.run(session):
        tools  = make_tools(session)          the task's tools as the framework's tool objects,
                                              each call ─▶ session.call_tool (gateway, recorded)
        agent  = factory(tools, system_prompt=..., **options)   (value, awaitable or async CM)
        answer = invoke(agent, session)       prompt in, final text out, usage recorded

Tool arguments are not validated by the framework: :func:`open_args_model`
shows the model the task's JSON Schema exactly as declared and accepts any
arguments, so a bad call reaches the gateway and is answered and recorded the
same way as with every other agent.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from copy import deepcopy
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import ToolSchema, Usage

from ..base import AgentFactory, AgentSpec, EpisodeContext, ToolSession
from ..builtin.python_agent import import_target


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def require_extra(kind: str, modules: tuple[str, ...], extra: str) -> None:
    """Check that a framework is installed, without importing it.

    Raises:
        SpecError: a module is missing; the message names the extra to install.
    """
    missing = [name for name in modules if not _installed(name)]
    if missing:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"{kind} agents need {', '.join(missing)}, not installed here; "
                    f"install with: pip install 'toolproof[{extra}]'",
                )
            ]
        )


def open_args_model(schema: ToolSchema) -> type[BaseModel]:
    """A pydantic model that accepts any arguments and shows the tool's JSON Schema as declared.

    Frameworks that describe tools with a pydantic model (LlamaIndex, AutoGen)
    get the task's schema verbatim from ``model_json_schema()``; validation is
    left to the gateway, as for every agent.
    """
    parameters = deepcopy(schema.parameters)

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow", title=schema.name)

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return deepcopy(parameters)

    Arguments.__name__ = Arguments.__qualname__ = f"{schema.name}_arguments"
    return Arguments


def arguments_of(model: BaseModel) -> dict[str, Any]:
    """The arguments held by an :func:`open_args_model` instance, as the model sent them."""
    return dict(model.model_extra or {})


def usage_of(prompt_tokens: Any, completion_tokens: Any) -> Usage | None:
    """A Usage from provider token counts, or None when the provider reported none."""
    if not isinstance(prompt_tokens, int) and not isinstance(completion_tokens, int):
        return None
    return Usage(
        input_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
        output_tokens=completion_tokens if isinstance(completion_tokens, int) else 0,
    )


@contextlib.asynccontextmanager
async def entered(made: Any) -> AsyncIterator[Any]:
    """The agent a factory made: its value, awaited if awaitable, entered if an async CM.

    An async context manager lets a factory close what it opened (a model
    client) when the episode ends.
    """
    if inspect.isawaitable(made):
        made = await made
    if hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        async with made as agent:
            yield agent
    else:
        yield made


class FrameworkAgent(ABC):
    """An agent-driven agent built by a user's factory for one framework.

    Args:
        factory: ``factory(tools, *, system_prompt, **options) -> agent``.
        options: The run's ``--agent-arg`` options, passed on to the factory.
        label: The spec, for messages.
    """

    kind: ClassVar[str]

    def __init__(self, factory: Callable[..., Any], options: dict[str, Any], label: str) -> None:
        self.factory = factory
        self.options = dict(options)
        self.label = label

    @abstractmethod
    def make_tools(self, session: ToolSession) -> list[Any]:
        """The session's tools as the framework's tool objects."""

    @abstractmethod
    async def invoke(self, agent: Any, session: ToolSession) -> str:
        """Run the framework's agent on the task; return its final answer."""

    async def run(self, session: ToolSession) -> str:
        """Build the user's agent with this episode's tools, run it, return the answer."""
        tools = self.make_tools(session)
        made = self.factory(tools, system_prompt=session.system_prompt, **self.options)
        async with entered(made) as agent:
            if agent is None:
                raise TypeError(f"the factory of {self.label} returned None, not an agent")
            return await self.invoke(agent, session)


def build_framework(
    spec: AgentSpec,
    agent_class: type[FrameworkAgent],
    *,
    modules: tuple[str, ...],
    extra: str,
) -> AgentFactory:
    """Check a framework spec once per run; return the per-episode factory.

    Raises:
        SpecError: no target, the framework is not installed, or the factory
            cannot be imported or is not callable.
    """
    kind = agent_class.kind
    if not spec.target:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"{kind} agents need a factory: {kind}:module:function, "
                    f"e.g. {kind}:my_agent:make_agent",
                )
            ]
        )
    require_extra(kind, modules, extra)
    factory = import_target(spec.target, "agent")
    if not callable(factory):
        raise SpecError(
            [Problem(None, None, "agent", f"{spec.target} is not callable; give a factory")]
        )

    def make(ctx: EpisodeContext) -> FrameworkAgent:
        return agent_class(factory, spec.options, spec.label)

    return make
