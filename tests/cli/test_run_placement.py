"""``toolproof run --parallel N`` alone: with many episodes in flight the run chooses worker
processes and the agent's loop itself, says so in one line, records it for a resume, and
gives the records it would have given without them; explicit flags win."""

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


def test_parallel_1000_on_a_long_run_chooses_workers_and_the_loop_and_says_so(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    chosen = _run(
        invoke, suite, tmp_path / "chosen", "--epochs", "1000", "--parallel", "1000",
        "--no-snapshots",
    )  # fmt: skip
    assert sum(LINE in line for line in chosen.err.splitlines()) == 1
    assert "loop=harness" in chosen.err
    assert (f"--workers {WORKERS}" in chosen.err) == (WORKERS > 1)
    assert _summary(tmp_path / "chosen")["config"]["placement"] == {
        "workers": WORKERS,
        "loop": "harness",
    }
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


def test_a_shorter_run_chooses_the_loop_but_no_workers_with_the_records_of_a_plain_run(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    chosen = _run(invoke, suite, tmp_path / "chosen", "--epochs", "40", "--parallel", "64")
    assert LINE in chosen.err and "worker processes" not in chosen.err
    assert _summary(tmp_path / "chosen")["config"]["placement"] == {
        "workers": 1,
        "loop": "harness",
    }
    plain = _run(
        invoke, suite, tmp_path / "plain", "--epochs", "40", "--parallel", "64",
        "--agent-arg", "loop=own",
    )  # fmt: skip
    assert LINE not in plain.err
    assert _records(tmp_path / "chosen") == _records(tmp_path / "plain")
    for section in SECTIONS:
        assert _summary(tmp_path / "chosen")[section] == _summary(tmp_path / "plain")[section]


def test_few_in_flight_chooses_nothing(invoke: Invoke, suite: Path, tmp_path: Path) -> None:
    result = _run(invoke, suite, tmp_path / "run", "--epochs", "40")  # --parallel 8
    assert LINE not in result.err
    assert _summary(tmp_path / "run")["config"]["placement"] is None


def test_an_explicit_workers_wins(invoke: Invoke, suite: Path, tmp_path: Path) -> None:
    args = ("--epochs", "1000", "--parallel", "1000", "--no-snapshots", "--workers", "1")
    result = _run(invoke, suite, tmp_path / "run", *args)
    assert "--workers 1 /" in result.err and "worker processes" not in result.err
    assert _summary(tmp_path / "run")["config"]["placement"] == {"workers": 1, "loop": "harness"}


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


def test_a_resume_keeps_the_choice_and_gives_the_records_of_one_plain_run(
    invoke: Invoke, suite: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    _run(invoke, suite, run_dir, "--epochs", "70", "--parallel", "64", "--limit", "1")
    assert len(_records(run_dir)) == 70  # task a only
    resumed = invoke("run", "--resume", run_dir, "--limit", "2", "--progress", "none")
    assert resumed.code == 0, resumed.err
    assert LINE in resumed.err  # the recorded choice, said again (--parallel 8 now)
    assert _summary(run_dir)["config"]["placement"] == {"workers": 1, "loop": "harness"}
    plain = _run(
        invoke, suite, tmp_path / "plain", "--epochs", "70", "--workers", "1",
        "--agent-arg", "loop=own",
    )  # fmt: skip
    assert LINE not in plain.err
    assert _records(run_dir) == _records(tmp_path / "plain")
    for section in SECTIONS:
        assert _summary(run_dir)[section] == _summary(tmp_path / "plain")[section], section
