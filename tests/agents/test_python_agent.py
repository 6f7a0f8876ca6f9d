"""``python:module:attr``: an agent instance, class or factory from the user's own module."""

from __future__ import annotations

from typing import Any

import pytest
import toolproof_test_agents as agents

from toolproof.agents import (
    Agent,
    DrivenAgent,
    EpisodeContext,
    Observation,
    build_agent,
    episode_context,
    parse_agent_spec,
)
from toolproof.spec import Limits, SpecError, Task, render
from toolproof.tools import resolve_tools
from toolproof_helpers import make_task


@pytest.fixture
def ctx() -> EpisodeContext:
    task = Task.model_validate(make_task())
    instance = render(task, suite="mini", suite_seed=1, epoch=0, limits=Limits(), system_prompt="s")
    return episode_context(instance, [t.schema for t in resolve_tools(task)])


def _wrapper(target: str, ctx: EpisodeContext) -> Any:
    return build_agent(parse_agent_spec(f"python:{target}"))(ctx)


def _make(target: str, ctx: EpisodeContext) -> object:
    """The user's agent inside the wrapper that runs it on its own thread."""
    return _wrapper(target, ctx).agent


def test_an_instance_is_shared(ctx: EpisodeContext) -> None:
    assert _make("toolproof_test_agents:answer_42", ctx) is agents.answer_42


def test_a_class_taking_the_context(ctx: EpisodeContext) -> None:
    made = _make("toolproof_test_agents:SlowRandom", ctx)
    assert isinstance(made, agents.SlowRandom)
    assert isinstance(_wrapper("toolproof_test_agents:SlowRandom", ctx), Agent)


def test_a_class_taking_no_arguments(ctx: EpisodeContext) -> None:
    first = _make("toolproof_test_agents:Answer42", ctx)
    assert isinstance(first, agents.Answer42)
    assert first is not _make("toolproof_test_agents:Answer42", ctx)


async def test_a_factory_function(ctx: EpisodeContext) -> None:
    made = _wrapper("toolproof_test_agents:first_tool_factory", ctx)
    assert isinstance(made, Agent)
    turn = await made.act(Observation(messages=[], tools=[], step=0))
    assert turn.tool_calls[0].name == ctx.tools[0].name
    await made.aclose()


def test_a_driven_agent(ctx: EpisodeContext) -> None:
    made = _wrapper("toolproof_test_agents:DrivenFirstTool", ctx)
    assert isinstance(made, DrivenAgent) and not isinstance(made, Agent)
    assert isinstance(made.agent, agents.DrivenFirstTool)


def test_a_keyed_factory_is_refused_as_a_python_agent() -> None:
    with pytest.raises(SpecError, match="never given the task instance"):
        build_agent(parse_agent_spec("python:toolproof_test_agents:driven_oracle"))


async def test_a_factory_returning_a_non_agent_fails_at_its_first_turn(
    ctx: EpisodeContext,
) -> None:
    factory = build_agent(parse_agent_spec("python:toolproof_test_agents:not_an_agent"))
    made = factory(ctx)  # making it does not raise into the harness
    with pytest.raises(Exception, match="has no act\\(\\) or run\\(\\)"):
        await made.act(Observation(messages=[], tools=[], step=0))


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("python", "need a target"),
        ("python:no_colon_here", "must look like 'module:attr'"),
        (
            "python:toolproof_no_such_module:agent",
            "cannot import module 'toolproof_no_such_module'",
        ),
        ("python:toolproof_test_agents:missing", "has no attribute 'missing'"),
        ("python:toolproof_test_agents:NUMBER", "neither an agent"),
    ],
)
def test_bad_targets_are_spec_errors(spec: str, said: str) -> None:
    with pytest.raises(SpecError, match=said):
        build_agent(parse_agent_spec(spec))
