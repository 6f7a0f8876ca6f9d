"""A driven agent's session passes the one ingress for agent bytes (invariant 8).

A tool name that is not valid Unicode is refused like bad arguments (an error result the
agent sees; nothing of it is recorded); usage and model calls that are not finite,
non-negative, plain data are refused to the agent's code (its ``agent_error`` when it lets
the refusal escape); a final answer with a lone surrogate is its ``agent_error``. None of
it is an ``infra_error``, and every such episode can be stored.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from toolproof.agents import ToolSession
from toolproof.agents.limits import AgentFault
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.results import EpisodeRecord, TaskFacts, encode_record
from toolproof.spec import Limits, Task, render
from toolproof.trajectory import Termination, Trajectory, Usage
from toolproof_helpers import make_task


async def _drive(agent: object) -> Trajectory:
    instance = render(
        Task.model_validate(make_task()),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(),
        system_prompt="Use the tools.",
    )
    options = EpisodeOptions(agent_label="driven")
    trajectory, score = await run_episode(instance, lambda ctx: agent, options)  # type: ignore[arg-type,return-value]
    facts = TaskFacts(id="t", type="single_tool", category="normal", difficulty=1, domain="shop")
    record = EpisodeRecord(
        key="t#0", task=facts, epoch=0, seed=0, agent="driven", score=score, trajectory=trajectory
    )
    encode_record(record)  # what the store writes: never refused
    return trajectory


@pytest.mark.parametrize("name", ["get_stock\udcff", "\ud800", 7, "x" * 300])
async def test_a_tool_name_that_is_not_short_valid_text_is_refused_as_bad_arguments(
    name: Any,
) -> None:
    seen: list[Any] = []

    class Caller:
        async def run(self, session: ToolSession) -> str:
            seen.append(await session.call_tool(name, {"product_id": "A"}))
            return "7"

    trajectory = await _drive(Caller())
    assert trajectory.termination is Termination.COMPLETED
    result = seen[0]
    assert (result.is_error, result.error_kind) == (True, "invalid_arguments")
    assert "the tool name" in result.content
    assert result.name == ""  # a name that cannot be recorded is not echoed
    assert not [s for s in trajectory.steps if s.message.tool_calls]  # nothing recorded


async def test_arguments_with_a_lone_surrogate_are_refused_not_an_infra_error() -> None:
    seen: list[Any] = []

    class Writer:
        async def run(self, session: ToolSession) -> str:
            seen.append(await session.call_tool("get_stock", {"product_id": "A\udcff"}))
            return "7"

    trajectory = await _drive(Writer())
    assert trajectory.termination is Termination.COMPLETED
    assert seen[0].error_kind == "invalid_arguments"
    assert "arguments.product_id holds a lone UTF-16 surrogate" in seen[0].content


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        (dict(input_tokens=-5), "usage.input_tokens must be from 0"),
        (dict(cost_usd=-24_690.0), "usage.cost_usd must be a finite number from 0"),
        (dict(cost_usd=float("nan")), "usage.cost_usd must be a finite number from 0"),
        (dict(output_tokens=10**30), "usage.output_tokens must be from 0"),
    ],
)
async def test_usage_that_is_not_finite_and_non_negative_is_refused(
    usage: dict[str, Any], said: str
) -> None:
    values = {"input_tokens": 0, "output_tokens": 0, "cost_usd": None, "estimated": False}
    bad = Usage.model_construct(**{**values, **usage})

    class Reporter:
        async def run(self, session: ToolSession) -> str:
            session.record_usage(bad)
            return "7"

    trajectory = await _drive(Reporter())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert said in (trajectory.error or "")
    assert trajectory.usage() == Usage()


async def test_a_refused_usage_the_agent_catches_is_not_recorded() -> None:
    class Stubborn:
        async def run(self, session: ToolSession) -> str:
            with contextlib.suppress(AgentFault):
                session.record_usage(Usage.model_construct(input_tokens=-1, output_tokens=0))
            return "7"

    trajectory = await _drive(Stubborn())
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.usage() == Usage()


@pytest.mark.parametrize(
    "call", [{"model": "m\udcff"}, {"latency_s": float("nan")}, {"\ud800": 1}, ["not", "a dict"]]
)
async def test_a_model_call_that_is_not_plain_data_is_refused(call: Any) -> None:
    class Lister:
        async def run(self, session: ToolSession) -> str:
            session.record_model_call(call)  # type: ignore[attr-defined]
            return "7"

    trajectory = await _drive(Lister())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "model call" in (trajectory.error or "")


async def test_a_final_answer_with_a_lone_surrogate_is_the_agents_error() -> None:
    class Answerer:
        async def run(self, session: ToolSession) -> str:
            return "seven \udcff"

    trajectory = await _drive(Answerer())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "lone UTF-16 surrogate" in (trajectory.error or "")
    assert trajectory.final_answer is None
