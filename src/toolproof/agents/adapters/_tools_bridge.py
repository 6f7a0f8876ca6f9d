"""What the agent-driven framework adapters share (LangChain, LlamaIndex, AutoGen).

The user writes one factory per framework; the adapter does the rest::

    spec "KIND:module:factory" ──build_framework──▶ per-episode FrameworkAgent
    FrameworkAgent.run(session):
        link   = model gateway path           the episode's own URL (toolproof.gateway); every
                                              model call through it is recorded and priced
        tools  = make_tools(session)          the task's tools as the framework's tool objects,
                                              each call ─▶ session.call_tool (gateway, recorded)
        agent  = factory(tools, system_prompt=..., **options)   (value, awaitable or async CM)
                 options: the factory's own keywords only: model, base_url (the gateway),
                 api_key (a placeholder), provider, and the --agent-arg values it declares
        answer = invoke(agent, session)       prompt in, final text out

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
from toolproof.trajectory import ToolSchema

from ..base import AgentFactory, AgentSpec, EpisodeContext, ToolSession
from ..builtin.python_agent import import_target
from ._anthropic_compat import mend
from ._via_gateway import HARNESS_OPTIONS, GatewayPlan, agent_options, episode_link, gateway_plan


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


def accepted_keywords(factory: Callable[..., Any]) -> set[str] | None:
    """The keyword options a factory declares, or None when it takes ``**options``."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it nothing extra
        return set()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }


def check_options(
    factory: Callable[..., Any], options: dict[str, Any], spec: AgentSpec
) -> set[str] | None:
    """Refuse ``--agent-arg`` options the factory does not declare (once per run).

    The model settings (``model``, ``base_url``, ``api_key``, ``provider``) and the
    harness's own (``cache``, ``prices``, ``max_model_calls``) are never refused: the
    harness keeps or replaces them, and hands the factory only those it declares.

    Raises:
        SpecError: an option the factory has no parameter for.
    """
    accepted = accepted_keywords(factory)
    if accepted is None:
        return None
    own = HARNESS_OPTIONS | {"model"}
    unknown = sorted(k for k in options if k not in own and k not in accepted)
    if unknown:
        declared = ", ".join(sorted(accepted - {"tools", "system_prompt"})) or "none"
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    f"--agent-arg {name}",
                    f"the factory {spec.target} has no parameter {name!r} (it declares: "
                    f"{declared}); add it to the factory's signature, or drop the option",
                )
                for name in unknown
            ]
        )
    return accepted


class FrameworkAgent(ABC):
    """An agent-driven agent built by a user's factory for one framework.

    Args:
        factory: ``factory(tools, *, system_prompt, **options) -> agent``.
        options: The run's ``--agent-arg`` options.
        label: The spec, for messages.
        plan: The run's model gateway route.
        accepted: The keywords the factory declares (None: it takes ``**options``).
        epoch: The episode's epoch (part of the model-call cache key).
    """

    kind: ClassVar[str]

    def __init__(
        self,
        factory: Callable[..., Any],
        options: dict[str, Any],
        label: str,
        plan: GatewayPlan | None = None,
        accepted: set[str] | None = None,
        epoch: int = 0,
    ) -> None:
        self.factory = factory
        self.options = dict(options)
        self.label = label
        self.plan = plan or gateway_plan(options, label)
        self.accepted = accepted
        self.epoch = epoch

    def factory_options(self, urls: dict[str, str]) -> dict[str, Any]:
        """The keywords the factory is called with: only those it declares."""
        given = agent_options(self.plan, urls, self.options)
        if self.accepted is None:
            return given
        return {k: v for k, v in given.items() if k in self.accepted}

    @abstractmethod
    def make_tools(self, session: ToolSession) -> list[Any]:
        """The session's tools as the framework's tool objects."""

    @abstractmethod
    async def invoke(self, agent: Any, session: ToolSession) -> str:
        """Run the framework's agent on the task; return its final answer."""

    async def run(self, session: ToolSession) -> str:
        """Build the user's agent with this episode's tools, run it, return the answer.

        Its model calls go through the episode's gateway path: each is recorded (usage
        and cost on the step it precedes). A provider failure the gateway could not
        retry away makes the episode an infra error, whatever the agent made of it.

        Raises:
            AgentInfraError: a model call failed for reasons not the agent's.
        """
        async with episode_link(self.plan, self.epoch, session) as link:
            tools = self.make_tools(session)
            options = self.factory_options(link.urls())
            made = self.factory(tools, system_prompt=session.system_prompt, **options)
            async with entered(made) as agent:
                if agent is None:
                    raise TypeError(f"the factory of {self.label} returned None, not an agent")
                mend(self.kind)  # its Anthropic client, imported by now (_anthropic_compat)
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
    accepted = check_options(factory, spec.options, spec)
    plan = gateway_plan(spec.options, spec.label)  # one route a run: shared backoff, cache

    def make(ctx: EpisodeContext) -> FrameworkAgent:
        return agent_class(factory, spec.options, spec.label, plan, accepted, ctx.epoch)

    return make
