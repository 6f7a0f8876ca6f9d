"""Defaults that scale: a run given many episodes in flight chooses worker processes itself
(``engine/_placement.py``), only where that is safe, never the harness's loop for an agent
(that stays the user's explicit ``--agent-arg loop=harness``), and records and scores
nothing differently for it. A ``Placement(loop="harness")`` built here directly still
exercises the engine's withdrawable loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.agents import AgentSpec, agent
from toolproof.engine import RunConfig, Runner
from toolproof.engine._placement import choose_placement, describe
from toolproof.engine.config import Placement
from toolproof_helpers import make_task, strip_timing

QUICK = "python:toolproof_placement_agents:Quick"


def _config(agent: str = "oracle", **fields: Any) -> RunConfig:
    return RunConfig(suite="/nowhere", agent=agent, **fields)


def _choose(config: RunConfig, **given: Any) -> Placement | None:
    options: dict[str, Any] = {"planned": 5000, "parallel": 1000, "cores": 2, **given}
    return choose_placement(config, **options)


def test_many_in_flight_chooses_a_worker_per_core_for_a_built_in_agent() -> None:
    assert _choose(_config("oracle")) == Placement(workers=2, loop=None)
    assert _choose(_config("random"), cores=8, planned=20_000) == Placement(workers=8, loop=None)
    # a worker process for every 1,000 episodes at most: its start-up must pay for itself
    assert _choose(_config("random"), cores=8) == Placement(workers=5, loop=None)
    assert _choose(_config("oracle"), planned=1999) is None
    assert _choose(_config(QUICK), planned=1999) is None


def test_the_run_never_puts_an_untrusted_python_agent_on_the_harness_loop() -> None:
    """The rule (F2, invariant 9): the run's own choice never weakens where agent code runs.
    An async ``python:`` agent gets worker processes where they pay, never ``loop=harness``:
    on that loop its code could reach every episode's task and stop the run. Only the user's
    explicit ``--agent-arg loop=harness`` puts it there."""
    assert _choose(_config(QUICK)) == Placement(workers=2, loop=None)
    assert _choose(_config(QUICK), cores=1) is None
    assert _choose(_config(QUICK), workers_given=True) is None


def test_few_in_flight_or_a_short_run_chooses_nothing() -> None:
    assert _choose(_config(QUICK), parallel=8) is None
    assert _choose(_config(QUICK), parallel=63) is None
    assert _choose(_config(QUICK), planned=1000) is None  # no more episodes than in flight
    assert _choose(_config(QUICK), executor="ray") is None


def test_explicit_options_win() -> None:
    own = _config(QUICK, agent_options={"loop": "own"})
    assert _choose(own) == Placement(workers=2, loop=None)
    assert _choose(_config("oracle"), workers_given=True) is None
    assert _choose(_config("oracle"), cores=1) is None


@pytest.fixture
def in_process_agent(restore_registries: None) -> Iterator[str]:
    """An agent kind registered in this process only: a worker process would not know it."""

    @agent("test-placement-in-process")
    def build(spec: AgentSpec) -> Any:
        return lambda ctx: None

    yield "test-placement-in-process"


def test_agents_a_worker_cannot_rebuild_get_no_workers(in_process_agent: str) -> None:
    assert _choose(_config(in_process_agent)) is None
    # a python: agent whose module is not a file on the path
    assert _choose(_config("python:no_such_module_here:Agent")) is None
    assert _choose(_config("python:__main__:Agent")) is None
    # a plain def act: worker processes are fine
    plain = _config("python:toolproof_placement_agents:Plain")
    assert _choose(plain) == Placement(workers=2, loop=None)


def test_agents_that_share_the_parents_gateway_or_cache_get_no_workers() -> None:
    assert _choose(_config("langchain", model="openai:gpt-4o-mini")) is None
    assert _choose(_config("openai:gpt-4o", agent_options={"cache": "/tmp/c"})) is None
    assert _choose(_config("oracle", judge_model="openai:gpt-4o")) is None
    assert _choose(_config("cmd:./agent")) is None


def test_the_choice_is_said_in_one_line() -> None:
    line = describe(Placement(workers=2, loop="harness"))
    assert "\n" not in line
    assert "--workers 2" in line and "loop=harness" in line and "--workers 1" in line


def test_the_placement_is_recorded_but_not_part_of_the_runs_identity() -> None:
    placed = _config(QUICK, placement=Placement(workers=2, loop="harness"))
    assert placed.identity() == _config(QUICK).identity()
    assert placed.model_dump()["placement"] == {"workers": 2, "loop": "harness"}


def _records(run_dir: Path) -> dict[str, Any]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return {t["episode_id"]: strip_timing(t) for t in map(json.loads, lines)}


@pytest.mark.parametrize(
    ("agent_name", "moved"), [("Blocking", True), ("plain_factory", True), ("Quick", False)]
)
def test_the_chosen_loop_gives_the_records_of_the_agents_own_thread(
    agent_name: str,
    moved: bool,
    suite_dir: Callable[..., Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An agent that blocks the harness's loop or is not async is run again on its own
    thread (said once); one that suits the loop stays there; the records are the same."""
    root = suite_dir([make_task(id="a"), make_task(id="b")])
    spec = f"python:toolproof_placement_agents:{agent_name}"
    base = RunConfig(suite=str(root), agent=spec, epochs=3, snapshots=False)
    placed = base.model_copy(update={"placement": Placement(loop="harness")})
    own = asyncio.run(Runner(base, tmp_path / "own", parallel=6).run())
    chosen = asyncio.run(Runner(placed, tmp_path / "chosen", parallel=6).run())
    assert own["terminations"]["completed"] == 6
    said = [r for r in caplog.records if "cannot run on the harness's event loop" in r.message]
    assert len(said) == (1 if moved else 0)
    assert _records(tmp_path / "chosen") == _records(tmp_path / "own")
    for section in ("episodes", "success", "levels", "tasks", "terminations"):
        assert chosen[section] == own[section], section


def test_a_recorded_placement_runs_worker_processes(
    suite_dir: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.engine import processes

    started: list[int] = []
    real = processes.ProcessExecutor.__init__

    def spy(self: Any, worker: Any, options: dict[str, Any]) -> None:
        started.append(int(options["workers"]))
        real(self, worker, options)

    monkeypatch.setattr(processes.ProcessExecutor, "__init__", spy)
    root = suite_dir([make_task(id="a")])
    config = RunConfig(
        suite=str(root), agent=QUICK, epochs=2, snapshots=False, placement=Placement(workers=2)
    )
    summary = asyncio.run(Runner(config, tmp_path / "run", parallel=2).run())
    assert started == [2] and summary["success"]["successes"] == 2
    explicit = Runner(config, tmp_path / "one", parallel=2, executor_options={"workers": 1})
    asyncio.run(explicit.run())
    assert started == [2]  # an explicit --workers 1 wins


def test_one_blocked_turn_takes_the_agent_off_the_loop_for_the_episodes_in_flight(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    """The first turn the guard refuses moves the agent at once: the other episodes in flight
    do not each block the harness's loop before they learn it."""
    import toolproof_placement_agents as agents

    agents.BLOCKED_ON_MAIN.clear()
    root = suite_dir([make_task(id="a")])
    config = RunConfig(
        suite=str(root),
        agent="python:toolproof_placement_agents:Blocking",
        epochs=8,
        snapshots=False,
        placement=Placement(loop="harness"),
    )
    summary = asyncio.run(Runner(config, tmp_path / "run", parallel=8).run())
    assert summary["terminations"]["completed"] == 8
    assert len(agents.BLOCKED_ON_MAIN) == 1, agents.BLOCKED_ON_MAIN
