"""Episodes with further user turns: the next message after a reply, tools offered later,
turn boundaries in the trajectory, limits, the oracle, and a driven agent's refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import toolproof_test_agents as test_agents

from toolproof.agents import AgentTurn, Observation, ToolSession
from toolproof.agents.builtin.oracle import OracleAgent
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.engine.preflight import task_problems
from toolproof.scoring import Score
from toolproof.spec import Limits, SpecError, Task, TaskInstance, load_suite, render
from toolproof.trajectory import Termination, Trajectory
from toolproof_helpers import make_task, write_suite

TURNS = [
    {"content": "Now add 5 units of A."},
    {"content": "And how many are there now?", "tools": ["adjust_stock"]},
]


def _task(**fields: Any) -> dict[str, Any]:
    fields.setdefault("user_turns", TURNS)
    return make_task(
        type="multi_step",
        solution={
            "calls": [{"tool": "get_stock", "args": {"product_id": "A"}}],
            "answer": "There are 7 units.",
            "turns": [
                {"calls": [], "answer": "I cannot change stock yet."},
                {
                    "calls": [{"tool": "adjust_stock", "args": {"product_id": "A", "delta": 5}}],
                    "answer": "There are 12 units.",
                },
            ],
        },
        success=[{"kind": "output", "number": 12}],
        **fields,
    )


def _instance(task: dict[str, Any], **limits: Any) -> TaskInstance:
    return render(
        Task.model_validate(task),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(**limits),
        system_prompt="Use the tools.",
    )


async def _run(agent: Any, task: dict[str, Any], **limits: Any) -> tuple[Trajectory, Score]:
    options = EpisodeOptions(agent_label="test")
    return await run_episode(_instance(task, **limits), lambda ctx: agent, options)


class Recording:
    """Replies at once every turn, keeping what it saw."""

    def __init__(self) -> None:
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> AgentTurn:
        self.seen.append(observation)
        return AgentTurn(content=f"reply {len(self.seen)}")


async def test_each_reply_brings_the_next_user_message_and_the_last_ends_it() -> None:
    agent = Recording()
    trajectory, _ = await _run(agent, _task())
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.final_answer == "reply 3"
    assert [s.annotations["user_turn"] for s in trajectory.steps] == [0, 1, 2]
    assert [s.annotations.get("next_user_turn") for s in trajectory.steps] == [1, 2, None]
    users = [m.content for m in trajectory.transcript() if m.role == "user"]
    assert users[1:] == [t["content"] for t in TURNS]
    last = agent.seen[-1].messages
    assert [m.role for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]


async def test_a_tool_is_hidden_until_its_turn_and_refused_before() -> None:
    agent = Recording()
    await _run(agent, _task())
    offered = [{t.name for t in o.tools} for o in agent.seen]
    assert offered == [{"get_stock"}, {"get_stock"}, {"get_stock", "adjust_stock"}]

    class Early:
        async def act(self, observation: Observation) -> AgentTurn:
            if observation.step == 0:
                return test_agents.calls(("adjust_stock", {"product_id": "A", "delta": 5}))
            return AgentTurn(content="ok")

    trajectory, _ = await _run(Early(), _task())
    (result,) = trajectory.steps[0].results
    assert (
        result.error_kind == "unknown_tool" and "adjust_stock" not in result.content.split(":")[-1]
    )


async def test_the_oracle_plays_every_turn_and_passes() -> None:
    instance = _instance(_task())
    trajectory, score = await run_episode(
        instance, lambda ctx: OracleAgent(instance), EpisodeOptions(agent_label="oracle")
    )
    assert score.passed and trajectory.final_answer == "There are 12 units."
    calls = [
        (c.name, s.annotations["user_turn"]) for s in trajectory.steps for c in s.message.tool_calls
    ]
    assert calls == [("get_stock", 0), ("adjust_stock", 2)]


async def test_the_step_limit_and_loop_guard_count_over_all_turns() -> None:
    trajectory, _ = await _run(Recording(), _task(), max_steps=2)
    assert trajectory.termination is Termination.STEP_LIMIT
    assert [s.annotations["user_turn"] for s in trajectory.steps] == [0, 1]

    class Looping:
        async def act(self, observation: Observation) -> AgentTurn:
            return test_agents.calls(("get_stock", {"product_id": "A"}))

    trajectory, _ = await _run(Looping(), _task())
    assert trajectory.termination is Termination.LOOP


async def test_giving_up_ends_the_episode_in_its_turn() -> None:
    class Quitter:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="I cannot", give_up=True)

    trajectory, score = await _run(Quitter(), _task())
    assert trajectory.termination is Termination.GAVE_UP and len(trajectory.steps) == 1
    assert not score.passed


async def test_an_agent_that_owns_its_loop_is_refused_with_the_reason() -> None:
    class Driven:
        async def run(self, session: ToolSession) -> str:
            return "12"

    with pytest.raises(SpecError, match=r"task stock has 3 user turns; agent 'test' owns its loop"):
        await _run(Driven(), _task())
    trajectory, _ = await _run(Driven(), make_task())  # one turn: runs as before
    assert trajectory.termination is Termination.COMPLETED


def test_hostile_turn_specs_are_refused_with_the_field() -> None:
    with pytest.raises(ValueError, match=r"solution.turns has 3 entries but the task has 2"):
        bad = _task()
        bad["solution"]["turns"].append({"answer": "x"})
        Task.model_validate(bad)
    with pytest.raises(ValueError, match="content"):
        Task.model_validate(_task(user_turns=[{"tools": []}, {"content": "x"}]))
    with pytest.raises(ValueError, match="extra"):
        Task.model_validate(_task(user_turns=[{"content": "x", "role": "system"}, *TURNS[1:]]))


def test_a_later_turn_naming_a_tool_the_task_lacks_is_a_problem_with_its_field(
    tmp_path: Path,
) -> None:
    task = _task(user_turns=[TURNS[0], {"content": "x", "tools": ["rm_rf"]}])
    write_suite(tmp_path, [task])
    with pytest.raises(SpecError, match=r"user_turns\[1\]\.tools\[0\].*'rm_rf' is not in this"):
        load_suite(str(tmp_path))


def test_an_unregistered_tool_handler_is_a_preflight_problem() -> None:
    tool = {"name": "run_it", "description": "runs", "handler": "no.such.handler"}
    task = Task.model_validate(make_task(tools=["get_stock", tool], solution={"answer": "7"}))
    problems = task_problems(task, Path("tasks/stock.yaml"), Path("."))
    assert any("no tool handler 'no.such.handler'" in p.message for p in problems), problems
