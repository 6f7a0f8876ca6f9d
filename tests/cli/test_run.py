"""``toolproof run``: the built-in agents set the floor and the ceiling; bad input is a message."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolproof.spec import resolve_suite_path
from toolproof_helpers import CliResult, make_task, strip_timing

Invoke = Callable[..., CliResult]


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())  # type: ignore[no-any-return]


def _trajectories(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_oracle_passes_every_core_task(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "core", "--agent", "oracle", "-o", tmp_path / "run", "-q")
    assert result.code == 0, result.err
    assert f"results: {tmp_path / 'run'}" in result.out
    summary = _summary(tmp_path / "run")
    assert summary["episodes"]["finished"] == summary["episodes"]["planned"] >= 10
    assert summary["success"]["successes"] == summary["episodes"]["finished"], [
        task for task, entry in summary["tasks"].items() if entry["passed"] < entry["scored"]
    ]


def test_noop_passes_no_core_task(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "core", "--agent", "noop", "-o", tmp_path / "run", "-q")
    assert result.code == 0, result.err
    summary = _summary(tmp_path / "run")
    assert summary["episodes"]["finished"] == summary["episodes"]["planned"] >= 10
    assert summary["success"]["successes"] == 0, [
        task for task, entry in summary["tasks"].items() if entry["passed"]
    ]


RANDOM = ["--agent", "random", "-k", "2", "--seed", "3", "-q"]


@pytest.fixture(scope="module")
def core_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of core: edits to the real one cannot change it between two runs."""
    copy = tmp_path_factory.mktemp("suites") / "core"
    return Path(shutil.copytree(resolve_suite_path("core"), copy))


@pytest.fixture(scope="module")
def random_run(tmp_path_factory: pytest.TempPathFactory, core_copy: Path) -> Path:
    """One run of the random agent over core (shared: a full run takes seconds)."""
    from toolproof.cli import main

    run_dir = tmp_path_factory.mktemp("random") / "run"
    main(["run", str(core_copy), *RANDOM, "-p", "1", "-o", str(run_dir)])
    return run_dir


def test_random_scores_low(random_run: Path) -> None:
    summary = _summary(random_run)
    assert summary["episodes"]["finished"] == summary["episodes"]["planned"] >= 20
    assert summary["success"]["rate"] <= 0.2
    assert summary["episodes"]["infra_errors"] == 0  # nothing random does is a harness failure


def test_the_console_summary_is_printed(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "core", "--agent", "oracle", "-t", "stock-*", "-o", tmp_path / "run")
    assert result.code == 0, result.err
    assert "success 100.0%" in result.out
    assert "stock-lookup" in result.out


def test_task_globs_select_tasks(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(
        "run", "core", "--agent", "oracle", "--task", "stock-*", "-t", "hello-file",
        "-o", tmp_path / "run", "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    tasks = set(_summary(tmp_path / "run")["tasks"])
    assert "hello-file" in tasks and "stock-lookup" in tasks
    assert all(t.startswith("stock-") or t == "hello-file" for t in tasks)
    nothing = invoke("run", "core", "--agent", "oracle", "-t", "zzz-*", "-o", tmp_path / "x")
    assert nothing.code == 2 and "no task of suite 'core' matches" in nothing.err


def test_agent_args_reach_the_agent(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(
        "run", "core", "--agent", "noop", "--agent-arg", "answer=42", "-t", "stock-lookup",
        "-o", tmp_path / "run", "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    (trajectory,) = _trajectories(tmp_path / "run")
    assert trajectory["final_answer"] == "42"
    assert _summary(tmp_path / "run")["config"]["agent_options"] == {"answer": 42}
    bad = invoke("run", "core", "--agent", "noop", "--agent-arg", "answer", "-o", tmp_path / "x")
    assert bad.code == 2 and "must look like key=value" in bad.err


def test_a_python_agent_from_a_test_module(invoke: Invoke, tmp_path: Path) -> None:
    agent = "python:toolproof_test_agents:first_tool_factory"  # blind: it gets no answer key
    result = invoke("run", "core", "--agent", agent, "-t", "stock-*", "-o", tmp_path / "run", "-q")
    assert result.code == 0, result.err
    summary = _summary(tmp_path / "run")
    assert summary["agent"] == agent
    trajectories = _trajectories(tmp_path / "run")
    assert trajectories and all(t["final_answer"] == t["task_id"] for t in trajectories)
    assert all(t["steps"][0]["message"]["tool_calls"] for t in trajectories)


def test_a_suite_directory(invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path) -> None:
    root = suite_dir([make_task()])
    result = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "run", "-q")
    assert result.code == 0, result.err
    assert _summary(tmp_path / "run")["suite"]["name"] == "mini"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["core", "--agent", "gpt-9"], ["unknown agent 'gpt-9'", "oracle", "random", "noop"]),
        (["nosuch", "--agent", "oracle"], ["no suite 'nosuch'", "core"]),
        (["core", "--agent", "python:toolproof_nope:agent"], ["cannot import module"]),
        (["core"], ["give --agent"]),
        (["--agent", "oracle"], ["give a SUITE"]),
        (["core", "--agent", "oracle", "--epochs", "0"], ["--epochs"]),
    ],
)
def test_bad_input_is_a_message_and_exit_2(
    invoke: Invoke, tmp_path: Path, args: list[str], said: list[str]
) -> None:
    result = invoke("run", *args, "-o", tmp_path / "run", "-q")
    assert result.code == 2
    for text in said:
        assert text in result.err
    assert "Traceback" not in result.err + result.out


def test_same_seed_same_scores_and_trajectories(
    random_run: Path, core_copy: Path, invoke: Invoke, tmp_path: Path
) -> None:
    again = invoke("run", core_copy, *RANDOM, "-p", "4", "-o", tmp_path / "again")
    assert again.code == 0, again.err
    first, second = _summary(random_run), _summary(tmp_path / "again")
    assert strip_timing(first["tasks"]) == strip_timing(second["tasks"])
    assert strip_timing(first) == strip_timing(second)
    assert strip_timing(_trajectories(random_run)) == strip_timing(
        _trajectories(tmp_path / "again")
    )


def test_another_seed_draws_other_episodes(invoke: Invoke, tmp_path: Path) -> None:
    for seed in ("3", "4"):
        args = ["run", "core", "--agent", "random", "-t", "stock-*", "-k", "2", "--seed", seed]
        assert invoke(*args, "-o", tmp_path / seed, "-q").code == 0
    assert strip_timing(_trajectories(tmp_path / "3")) != strip_timing(
        _trajectories(tmp_path / "4")
    )


@pytest.mark.parametrize(
    ("suite", "attack", "said"),
    [
        ("core", "important_instructions", "has no attacks to place"),  # not a provided suite
        ("agentdojo:banking", "../../etc/passwd", "is not an attack name"),
        ("agentdojo:banking", "Important Instructions", "is not an attack name"),
        ("agentdojo:banking", "x" * 5000 + "\n", "is not an attack name"),
    ],
)
def test_a_bad_attack_is_refused_before_anything_runs(
    invoke: Invoke, tmp_path: Path, suite: str, attack: str, said: str
) -> None:
    result = invoke("run", suite, "--agent", "oracle", "--attack", attack, "-o", tmp_path / "r")
    assert result.code == 2 and said in result.err and "Traceback" not in result.err
    assert not (tmp_path / "r").exists()
