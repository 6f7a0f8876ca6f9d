"""One episode end to end: every termination reason, parallel calls, agent-driven agents."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import toolproof_test_agents as test_agents

from toolproof.agents import AgentInfraError, AgentTurn, EpisodeContext, Observation, ToolSession
from toolproof.agents._outage import observed_outage
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.sandbox import SpawnerLost
from toolproof.scoring import Level, Score
from toolproof.spec import Limits, Task, TaskInstance, render
from toolproof.tools import ToolContext, tool
from toolproof.trajectory import Termination, ToolCall, Trajectory, Usage
from toolproof.worlds import BlobStore, World
from toolproof_helpers import make_task


class Scripted:
    """Plays the given turns, then answers ``answer``."""

    def __init__(self, *turns: AgentTurn, answer: str = "7") -> None:
        self.turns = list(turns)
        self.answer = answer
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> AgentTurn:
        self.seen.append(observation)
        if observation.step < len(self.turns):
            return self.turns[observation.step]
        return AgentTurn(content=self.answer)


class Forever:
    """Calls get_stock with a new (unknown) product every turn: never loops, never answers."""

    async def act(self, observation: Observation) -> AgentTurn:
        return test_agents.calls(("get_stock", {"product_id": f"P{observation.step}"}))


def _instance(task: dict[str, Any] | None = None, **limits: Any) -> TaskInstance:
    spec = Task.model_validate(task or make_task())
    return render(
        spec,
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(**limits),
        system_prompt="Use the tools.",
    )


async def _run(
    agent: object, task: dict[str, Any] | None = None, tmp_root: Path | None = None, **limits: Any
) -> tuple[Trajectory, Score]:
    options = EpisodeOptions(agent_label="test", tmp_root=tmp_root)
    return await run_episode(_instance(task, **limits), lambda ctx: agent, options)  # type: ignore[arg-type,return-value]


async def test_completed_and_scored() -> None:
    agent = Scripted(test_agents.calls(("get_stock", {"product_id": "A"})), answer="7 units")
    trajectory, score = await _run(agent)
    assert trajectory.termination is Termination.COMPLETED and trajectory.error is None
    assert trajectory.final_answer == "7 units"
    assert [m.role for m in trajectory.prompt] == ["system", "user"]
    assert trajectory.prompt[0].content == "Use the tools."
    assert len(trajectory.steps) == 2
    (result,) = trajectory.steps[0].results
    assert result.content == '{"product_id": "A", "stock": 7}'
    assert (score.passed, score.level, score.tool_calls) == (True, Level.PERFECT, 1)
    # The agent saw its own call and the result on its second turn.
    second = agent.seen[1]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.messages[-1].content == result.content
    assert {t.name for t in second.tools} == {"get_stock", "adjust_stock"}


async def test_gave_up() -> None:
    class GiveUp:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="I cannot do this", give_up=True)

    trajectory, score = await _run(GiveUp())
    assert trajectory.termination is Termination.GAVE_UP
    assert trajectory.final_answer == "I cannot do this"
    assert not score.passed


async def test_a_task_that_gives_up_correctly_is_still_not_completed() -> None:
    class GiveUpRight:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="7", give_up=True)

    trajectory, score = await _run(GiveUpRight())
    assert trajectory.termination is Termination.GAVE_UP
    assert score.level is Level.PARTIAL  # the answer is right, but a give-up never passes


async def test_step_limit() -> None:
    trajectory, score = await _run(Forever(), max_steps=3)
    assert trajectory.termination is Termination.STEP_LIMIT
    assert len(trajectory.steps) == 3
    assert trajectory.error == "no answer after 3 steps"
    assert trajectory.final_answer is None and not score.passed


async def test_step_timeout_ends_a_slow_turn() -> None:
    started = time.monotonic()
    trajectory, score = await _run(test_agents.Sleepy(5.0), step_timeout_s=0.2)
    assert time.monotonic() - started < 4
    assert trajectory.termination is Termination.TIMEOUT
    assert "took longer than 0.2s" in (trajectory.error or "")
    assert not score.passed


async def test_total_timeout_ends_the_episode() -> None:
    class Slowish:
        async def act(self, observation: Observation) -> AgentTurn:
            await asyncio.sleep(0.15)
            return test_agents.calls(("get_stock", {"product_id": f"P{observation.step}"}))

    started = time.monotonic()
    trajectory, _ = await _run(Slowish(), total_timeout_s=0.5, step_timeout_s=10)
    assert time.monotonic() - started < 4
    assert trajectory.termination is Termination.TIMEOUT
    assert len(trajectory.steps) < 10  # 0.15 s a turn: at most a few fit in 0.5 s


async def test_the_same_call_on_the_same_state_is_a_loop() -> None:
    same = test_agents.calls(("get_stock", {"product_id": "A"}))
    trajectory, score = await _run(Scripted(*[same] * 10))
    assert trajectory.termination is Termination.LOOP
    assert len(trajectory.steps) == 3  # the default threshold
    assert "get_stock" in (trajectory.error or "") and "repeated 3 times" in (
        trajectory.error or ""
    )
    assert not score.passed
    short, _ = await _run(Scripted(*[same] * 10), loop_threshold=2)
    assert (short.termination, len(short.steps)) == (Termination.LOOP, 2)


async def test_the_same_write_on_a_changing_state_is_not_a_loop() -> None:
    restock = test_agents.calls(("adjust_stock", {"product_id": "A", "delta": 1}))
    trajectory, _ = await _run(Scripted(*[restock] * 4, answer="11"))
    assert trajectory.termination is Termination.COMPLETED
    assert len(trajectory.steps) == 5


async def test_an_agent_that_raises_is_an_agent_error() -> None:
    trajectory, score = await _run(test_agents.Raising(RuntimeError("the agent fell over")))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert (trajectory.error or "").startswith("RuntimeError: the agent fell over at ")
    assert (score.passed, score.level) == (False, Level.FAIL)


async def test_an_agent_that_returns_nonsense_is_an_agent_error() -> None:
    class Nonsense:
        async def act(self, observation: Observation) -> str:
            return "not a turn"

    trajectory, _ = await _run(Nonsense())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "act() returned str, not AgentTurn" in (trajectory.error or "")


async def test_a_provider_failure_toolproof_observed_is_an_infra_error() -> None:
    trajectory, score = await _run(test_agents.Raising(observed_outage("HTTP 503")))
    assert trajectory.termination is Termination.INFRA_ERROR
    assert trajectory.error == "HTTP 503"
    assert (score.passed, score.level, score.termination) == (
        False,
        Level.FAIL,
        Termination.INFRA_ERROR,
    )


async def test_an_agents_own_infra_error_is_its_failure_not_an_outage() -> None:
    trajectory, score = await _run(test_agents.Raising(AgentInfraError("HTTP 503")))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "HTTP 503" in (trajectory.error or "")
    assert "no outage toolproof observed" in (trajectory.error or "")
    assert (score.passed, score.termination) == (False, Termination.AGENT_ERROR)


@pytest.fixture
def crashing_tool(restore_registries: None) -> Iterator[str]:
    @tool(name="tp_test_crashing_tool")
    def crashing(ctx: ToolContext) -> str:
        """Always crashes."""
        raise RuntimeError("bug in the tool")

    yield "tp_test_crashing_tool"


async def test_a_crashing_tool_fails_the_episode_and_stays_in_the_score(
    crashing_tool: str,
) -> None:
    # The agent chose the call that set the crash off: a failure said loudly, never an
    # infra error that would leave the denominator (invariant 8).
    task = make_task(tools=["get_stock", crashing_tool])
    trajectory, score = await _run(Scripted(test_agents.calls((crashing_tool, {}))), task=task)
    assert trajectory.termination is Termination.AGENT_ERROR
    assert (trajectory.error or "").startswith("toolproof fault: ")
    assert "crashed: RuntimeError: bug in the tool" in (trajectory.error or "")
    assert score.level is Level.FAIL and not score.passed


async def test_a_crash_toolproof_witnessed_is_an_infra_error(
    restore_registries: None,
) -> None:
    @tool(name="tp_test_lost_spawner")
    def lost(ctx: ToolContext) -> str:
        """Its spawner is gone."""
        raise SpawnerLost("the sandbox's command spawner failed: stopped")

    task = make_task(tools=["get_stock", "tp_test_lost_spawner"])
    trajectory, _ = await _run(Scripted(test_agents.calls(("tp_test_lost_spawner", {}))), task=task)
    assert trajectory.termination is Termination.INFRA_ERROR
    assert "spawner" in (trajectory.error or "")


async def test_parallel_calls_in_one_turn() -> None:
    turn = AgentTurn(
        tool_calls=[
            ToolCall(id="same", name="get_stock", arguments={"product_id": "A"}),
            ToolCall(id="same", name="get_stock", arguments={"product_id": "Z"}),
            ToolCall(id="", name="adjust_stock", arguments={"product_id": "A", "delta": -2}),
        ],
        usage=Usage(input_tokens=10, output_tokens=3),
    )
    trajectory, score = await _run(Scripted(turn, answer="5"))
    step = trajectory.steps[0]
    ids = [c.id for c in step.message.tool_calls]
    assert len(set(ids)) == 3 and all(ids)
    assert [r.call_id for r in step.results] == ids  # results in call order, ids matched
    assert [r.is_error for r in step.results] == [False, True, False]
    assert step.diff is not None and step.diff.records == {"products.A.stock": [7, 5]}
    assert [c.name for c, _ in trajectory.tool_calls()] == [
        "get_stock",
        "get_stock",
        "adjust_stock",
    ]
    assert trajectory.usage() == Usage(input_tokens=10, output_tokens=3)
    assert score.tool_calls == 3


async def test_steps_record_digests_diffs_and_snapshots(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    agent = Scripted(
        test_agents.calls(("get_stock", {"product_id": "A"})),
        test_agents.calls(("adjust_stock", {"product_id": "A", "delta": 3})),
        answer="10",
    )
    options = EpisodeOptions(agent_label="test", blobs=blobs)
    trajectory, _ = await run_episode(_instance(), lambda ctx: agent, options)  # type: ignore[arg-type,return-value]
    read, write, answer = trajectory.steps
    assert read.diff is None and write.diff is not None and answer.diff is None
    assert read.state_digest != write.state_digest == answer.state_digest
    before = World.load_snapshot(blobs, read.annotations["before"])
    after = World.load_snapshot(blobs, write.snapshot or "")
    assert before.records["products"]["A"]["stock"] == 7
    assert after.records["products"]["A"]["stock"] == 10


async def test_the_workspace_is_removed_after_the_episode(tmp_path: Path) -> None:
    task = make_task(world={"files": {"a.txt": "x"}})
    trajectory, _ = await _run(Scripted(), task=task, tmp_root=tmp_path)
    assert trajectory.termination is Termination.COMPLETED
    assert list(tmp_path.iterdir()) == []


async def test_a_driven_agent_is_recorded_step_by_step() -> None:
    task = make_task()
    task["solution"]["calls"].append(
        {"tool": "adjust_stock", "args": {"product_id": "A", "delta": 0}}
    )
    options = EpisodeOptions(agent_label="driven")
    trajectory, score = await run_episode(_instance(task), test_agents.driven_oracle, options)
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.final_answer == "There are 7 units."
    assert [[c.name for c in s.message.tool_calls] for s in trajectory.steps] == [
        ["get_stock"],
        ["adjust_stock"],
        [],
    ]
    assert trajectory.steps[0].results[0].content == '{"product_id": "A", "stock": 7}'
    assert score.passed


async def test_a_driven_agent_past_the_step_limit() -> None:
    class Greedy:
        results: list[str] = []

        async def run(self, session: ToolSession) -> str:
            session.record_usage(Usage(input_tokens=5, output_tokens=1))
            for n in range(5):
                result = await session.call_tool("get_stock", {"product_id": f"P{n}"})
                self.results.append(result.content)
            return "7"

    agent = Greedy()
    trajectory, _ = await _run_driven(agent, max_steps=2)
    assert trajectory.termination is Termination.STEP_LIMIT
    assert len([s for s in trajectory.steps if s.message.tool_calls]) == 2
    assert "step limit is reached" in agent.results[-1]
    assert trajectory.usage().input_tokens == 5


async def test_a_driven_agent_that_raises_is_an_agent_error() -> None:
    class Broken:
        async def run(self, session: ToolSession) -> str:
            await session.call_tool("get_stock", {"product_id": "A"})
            raise ValueError("lost my way")

    trajectory, _ = await _run_driven(Broken())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "ValueError: lost my way" in (trajectory.error or "")
    assert len(trajectory.steps) == 1  # the call it made is kept


async def _run_driven(agent: object, **limits: Any) -> tuple[Trajectory, Score]:
    def factory(ctx: EpisodeContext) -> Any:
        return agent

    return await run_episode(_instance(**limits), factory, EpisodeOptions(agent_label="driven"))
