"""``toolproof run --parallel N`` alone: with many episodes in flight the run chooses worker
processes itself, says so in one line, records it for a resume, and gives the records it
would have given without them; explicit flags win.

The rule for the agent's loop (F2): the run never puts a ``python:`` agent (code it does not
own) on the harness's event loop by itself; only ``--agent-arg loop=harness`` does, and an
agent that stops that loop leaves an incomplete run (exit 3, no traceback) that a resume with
``--agent-arg loop=own`` completes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.agents import AgentSpec, agent, build_agent, parse_agent_spec
from toolproof_helpers import CliResult, make_task, strip_timing

Invoke = Callable[..., CliResult]
QUICK = "python:toolproof_placement_agents:Quick"
CORES = os.cpu_count() or 1
WORKERS = CORES if CORES > 1 else 1
LINE = "many episodes in flight"
SECTIONS = ("episodes", "success", "levels", "tasks", "terminations")


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())  # type: ignore[no-any-return]


def _records(run_dir: Path) -> dict[str, Any]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return {t["episode_id"]: strip_timing(t) for t in map(json.loads, lines)}


@pytest.fixture
def suite(suite_dir: Callable[..., Path]) -> Path:
    return suite_dir([make_task(id="a"), make_task(id="b")])


def _run(invoke: Invoke, suite: Path, out: Path, *args: str) -> CliResult:
    result = invoke("run", suite, "--agent", QUICK, "-o", out, "--progress", "none", *args)
    assert result.code == 0, result.err
    return result


def test_parallel_1000_on_a_long_run_chooses_workers_never_the_loop_and_says_so(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    chosen = _run(
        invoke, suite, tmp_path / "chosen", "--epochs", "1000", "--parallel", "1000",
        "--no-snapshots",
    )  # fmt: skip
    assert sum(LINE in line for line in chosen.err.splitlines()) == (WORKERS > 1)
    assert "loop=harness" not in chosen.err.replace("--agent-arg loop=own", "")
    assert (f"--workers {WORKERS}" in chosen.err) == (WORKERS > 1)
    placement = {"workers": WORKERS, "loop": None} if WORKERS > 1 else None
    assert _summary(tmp_path / "chosen")["config"]["placement"] == placement
    plain = _run(  # the same episodes (each a function of suite, seed, epoch), fewer of them
        invoke, suite, tmp_path / "plain", "--epochs", "25", "--parallel", "1000",
        "--no-snapshots", "--workers", "1", "--agent-arg", "loop=own",
    )  # fmt: skip
    assert LINE not in plain.err
    assert _summary(tmp_path / "plain")["config"]["placement"] is None
    chosen_records, plain_records = _records(tmp_path / "chosen"), _records(tmp_path / "plain")
    assert len(chosen_records) == 2000 and len(plain_records) == 50
    assert {key: chosen_records[key] for key in plain_records} == plain_records
    assert _summary(tmp_path / "chosen")["success"]["successes"] == 2000


def test_a_shorter_run_of_an_async_python_agent_chooses_nothing(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    """No worker processes (too few episodes) and never the harness's loop: nothing."""
    chosen = _run(invoke, suite, tmp_path / "chosen", "--epochs", "40", "--parallel", "64")
    assert LINE not in chosen.err
    assert _summary(tmp_path / "chosen")["config"]["placement"] is None


def test_few_in_flight_chooses_nothing(invoke: Invoke, suite: Path, tmp_path: Path) -> None:
    result = _run(invoke, suite, tmp_path / "run", "--epochs", "40")  # --parallel 8
    assert LINE not in result.err
    assert _summary(tmp_path / "run")["config"]["placement"] is None


def test_an_explicit_workers_wins(invoke: Invoke, suite: Path, tmp_path: Path) -> None:
    args = ("--epochs", "1000", "--parallel", "1000", "--no-snapshots", "--workers", "1")
    result = _run(invoke, suite, tmp_path / "run", *args)
    assert LINE not in result.err
    assert _summary(tmp_path / "run")["config"]["placement"] is None


def test_an_agent_that_stops_the_harness_loop_leaves_an_incomplete_run_resumable_on_its_thread(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    """Under the explicit opt-in, ``loop.stop()`` from agent code: exit 3 with the command
    to resume, no traceback; ``--resume --agent-arg loop=own`` completes the run."""
    run_dir = tmp_path / "run"
    stopper = "python:toolproof_placement_agents:Stopper"
    args = ("--agent", stopper, "--agent-arg", "loop=harness", "--epochs", "3")
    stopped = invoke("run", suite, "-o", run_dir, "--progress", "none", *args)
    assert stopped.code == 3, stopped.err
    assert "Traceback" not in stopped.err
    assert "event loop was stopped" in stopped.err
    assert f"toolproof run --resume {run_dir} --agent-arg loop=own" in stopped.err
    assert not (run_dir / "summary.json").exists()
    resumed = invoke("run", "--resume", run_dir, "--agent-arg", "loop=own", "--progress", "none")
    assert resumed.code == 0, resumed.err
    summary = _summary(run_dir)
    assert summary["episodes"]["complete"] and summary["episodes"]["finished"] == 6
    assert summary["episodes"]["infra_errors"] == 0


@pytest.fixture
def in_process_agent(restore_registries: None) -> Iterator[str]:
    """The oracle under a kind registered in this process only (no worker would know it)."""

    @agent("test-placement-cli")
    def build(spec: AgentSpec) -> Any:
        return build_agent(parse_agent_spec("oracle"))

    yield "test-placement-cli"


def test_an_agent_only_this_process_knows_gets_no_workers(
    invoke: Invoke, in_process_agent: str, suite: Path, tmp_path: Path
) -> None:
    args = ("--agent", in_process_agent, "--epochs", "1000", "--parallel", "1000")
    result = invoke(
        "run", suite, "-o", tmp_path / "run", "--progress", "none", "--no-snapshots", *args
    )
    assert result.code == 0, result.err
    assert LINE not in result.err
    summary = _summary(tmp_path / "run")
    assert summary["config"]["placement"] is None
    assert summary["success"]["successes"] == 2000


def test_a_resume_drops_a_recorded_loop_and_gives_the_records_of_one_plain_run(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    """A run an older toolproof placed on the harness's loop itself (``placement.loop``
    recorded) resumes with the agent on its own thread: the run's choice never puts it
    there."""
    from toolproof.results import RunStore

    run_dir = tmp_path / "run"
    _run(invoke, suite, run_dir, "--epochs", "70", "--parallel", "64", "--limit", "1")
    assert len(_records(run_dir)) == 70  # task a only
    store = RunStore(run_dir)
    try:
        meta = store.meta()
        meta["config"]["placement"] = {"workers": 1, "loop": "harness"}
        store.set_meta(meta)
    finally:
        store.close()
    resumed = invoke("run", "--resume", run_dir, "--limit", "2", "--progress", "none")
    assert resumed.code == 0, resumed.err
    assert LINE not in resumed.err
    assert _summary(run_dir)["config"]["placement"] is None
    plain = _run(
        invoke, suite, tmp_path / "plain", "--epochs", "70", "--workers", "1",
        "--agent-arg", "loop=own",
    )  # fmt: skip
    assert LINE not in plain.err
    assert _records(run_dir) == _records(tmp_path / "plain")
    for section in SECTIONS:
        assert _summary(run_dir)[section] == _summary(tmp_path / "plain")[section], section
