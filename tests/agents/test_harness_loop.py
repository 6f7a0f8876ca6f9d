"""``python:`` agents with ``--agent-arg loop=harness``: on the harness's loop, each stretch
between two awaits timed, everything else as for any agent."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import harness_loop_agents as agents
import pytest

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.engine import EpisodeOptions, RunConfig, Runner, run_episode
from toolproof.results import RunReader
from toolproof.spec import Limits, SpecError, Task, render
from toolproof.trajectory import Termination, Trajectory
from toolproof_helpers import make_task


def _factory(name: str, **options: Any) -> Any:
    return build_agent(parse_agent_spec(f"python:harness_loop_agents:{name}", options))


def _instance(step_timeout_s: float = 60.0) -> Any:
    """The task; its step limit far above any stretch an agent here makes, so a busy
    machine never turns a stretch's agent_error (or a completion) into a timeout."""
    return render(
        Task.model_validate(make_task()),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(step_timeout_s=step_timeout_s),
        system_prompt="s",
    )


def _held_s(error: str | None) -> float:
    """The seconds an agent_error says the loop was held (``... for 0.72s without ...``)."""
    found = re.search(r"held the harness's event loop for ([0-9.]+) ?s", error or "")
    assert found is not None, error
    return float(found.group(1))


async def _run(
    name: str, episodes: int = 1, step_timeout_s: float = 60.0, **options: Any
) -> list[Trajectory]:
    instance = _instance(step_timeout_s)
    factory = _factory(name, **{"loop": "harness", **options})
    options_ = EpisodeOptions(agent_label="t")
    runs = [run_episode(instance, factory, options_) for _ in range(episodes)]
    return [trajectory for trajectory, _ in await asyncio.gather(*runs)]


async def test_the_agent_its_factory_and_its_close_run_on_the_harness_loop() -> None:
    agents.SEEN.clear()
    [trajectory] = await _run("Stock")
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert trajectory.final_answer == "7 units"
    here = (threading.get_ident(), asyncio.get_running_loop())
    assert [what for what, _, _ in agents.SEEN] == ["factory", "act", "act", "aclose"]
    assert all((ident, loop) == here for what, ident, loop in agents.SEEN if what != "factory")
    assert agents.SEEN[0][1] == here[0]  # the factory is called in place, not on a thread


async def test_it_records_what_an_agent_on_its_own_thread_records() -> None:
    [harness] = await _run("Stock")
    own = _factory("Stock")  # the default: its own thread
    other, _ = await run_episode(_instance(), own, EpisodeOptions(agent_label="t"))

    def plain(t: Trajectory) -> Any:
        return [(s.message.model_dump(), [r.content for r in s.results]) for s in t.steps]

    assert plain(harness) == plain(other) and harness.final_answer == other.final_answer


@pytest.mark.parametrize(
    "name", ["Blocks", "Spins", "AwaitsAnObject", "SlowToMake", "BlocksBeforeItsCoroutine"]
)
async def test_a_stretch_without_an_await_over_the_limit_ends_its_episode(name: str) -> None:
    [trajectory] = await _run(name, block_limit_s=0.2)
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    # The stretch the agent made (0.6 s), as measured: never less, more on a busy machine.
    assert _held_s(trajectory.error) >= 0.59
    assert "without awaiting (the limit is 0.2s" in (trajectory.error or "")
    if name == "Spins":
        assert agents.Spins.turns == 1  # stopped at the stretch, not after the next await


async def test_below_the_limit_a_busy_stretch_is_the_agents_own_business() -> None:
    [trajectory] = await _run("Blocks", block_limit_s=30)  # a 0.6 s stretch, even when slow
    assert trajectory.termination is Termination.COMPLETED, trajectory.error


async def test_a_plain_def_act_is_refused_as_the_agents_error() -> None:
    [trajectory] = await _run("Plain")
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "not a coroutine" in (trajectory.error or "")
    assert "leave `loop` unset" in (trajectory.error or "")


async def test_what_the_agent_raises_is_its_episodes_agent_error() -> None:
    [trajectory] = await _run("Exits")
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "SystemExit" in (trajectory.error or "")


async def test_the_step_limit_cancels_an_agent_that_awaits_too_long() -> None:
    agents.Waits.cancelled = 0
    trajectories = await _run("Waits", episodes=3, step_timeout_s=1.0)  # it awaits 60 s
    assert [t.termination for t in trajectories] == [Termination.TIMEOUT] * 3
    assert agents.Waits.cancelled == 3  # the cancellation reached the agent's code


async def test_an_agent_that_owns_its_loop_runs_there_too() -> None:
    agents.SEEN.clear()
    [trajectory] = await _run("Drives")
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert trajectory.final_answer == '{"product_id": "A", "stock": 7} -> 7 units'
    here = (threading.get_ident(), asyncio.get_running_loop())
    assert [(what, ident, loop) for what, ident, loop in agents.SEEN] == [("run", *here)]


@pytest.mark.parametrize(
    ("options", "field", "says"),
    [
        ({"loop": "thread"}, "agent_options.loop", "'own' (the default"),
        ({"loop": ["harness"]}, "agent_options.loop", "is not a place"),
        ({"block_limit_s": 2}, "agent_options.block_limit_s", "loop=harness only"),
        ({"loop": "harness", "block_limit_s": 0}, "agent_options.block_limit_s", "above 0"),
        ({"loop": "harness", "block_limit_s": "1"}, "agent_options.block_limit_s", "above 0"),
        ({"loop": "harness", "block_limit_s": True}, "agent_options.block_limit_s", "above 0"),
        (
            {"loop": "harness", "block_limit_s": float("nan")},
            "agent_options.block_limit_s",
            "above 0",
        ),
    ],
)
def test_bad_options_are_refused_naming_the_field(
    options: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(SpecError) as raised:
        build_agent(parse_agent_spec("python:harness_loop_agents:Stock", options))
    assert field in str(raised.value) and says in str(raised.value)


def test_a_run_an_agent_stopped_from_the_harness_loop_resumes_with_nothing_lost(
    tmp_path: Path, suite_dir: Any
) -> None:
    agents.STOPPED.clear()
    root = suite_dir([make_task()])
    config = RunConfig(
        suite=str(root),
        agent="python:harness_loop_agents:StopsTheLoopOnce",
        agent_options={"loop": "harness"},
        epochs=8,
    )
    with pytest.raises(RuntimeError):  # the loop stopped under the runner: the run ends
        asyncio.run(Runner(config, tmp_path / "run", parallel=1).run())
    assert agents.STOPPED == [3]
    with RunReader(tmp_path / "run") as reader:
        kept = {r.key for r in reader.records()}
    finished = {f"{make_task()['id']}#{epoch}" for epoch in range(3)}
    assert finished <= kept <= finished | {f"{make_task()['id']}#3"}  # none lost, none made up
    summary = asyncio.run(Runner(config, tmp_path / "run", parallel=1).run())  # a resume
    assert summary["episodes"]["finished"] == 8 and summary["episodes"]["complete"]
    assert summary["success"]["successes"] == 8


async def test_a_coroutine_that_yields_garbage_to_the_loop_is_its_agent_error() -> None:
    [trajectory] = await _run("YieldsGarbage")
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "bad yield" in (trajectory.error or "")
