"""The runner: plans episodes, contains agent crashes, retries infra errors, refuses bad resumes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import toolproof_test_agents as test_agents

from toolproof.engine import ResumeError, RunConfig, Runner, plan
from toolproof.results import RunReader
from toolproof.spec import SpecError, load_suite
from toolproof.trajectory import Termination
from toolproof_helpers import make_task, strip_timing

FLAKY = "test-flaky"  # a keyed kind registered by toolproof_test_agents (plays the key)


def _suite(suite_dir: Callable[..., Path], *ids: str) -> Path:
    return suite_dir([make_task(id=task_id) for task_id in ids])


def _run(config: RunConfig, run_dir: Path, parallel: int = 2) -> dict[str, Any]:
    return asyncio.run(Runner(config, run_dir, parallel=parallel).run())


@pytest.fixture(autouse=True)
def _fresh_attempts() -> None:
    test_agents.ATTEMPTS.clear()


def test_plan_is_tasks_by_epochs_filtered_by_globs(suite_dir: Callable[..., Path]) -> None:
    root = _suite(suite_dir, "alpha", "beta-1", "beta-2")
    suite = load_suite(root)
    config = RunConfig(suite=str(root), agent="oracle", epochs=2, tasks=["beta-*"])
    assert [j.key for j in plan(config, suite)] == ["beta-1#0", "beta-1#1", "beta-2#0", "beta-2#1"]
    with pytest.raises(SpecError, match="no task of suite 'mini' matches"):
        Runner(RunConfig(suite=str(root), agent="oracle", tasks=["gamma"]), Path("unused"))


def test_an_agent_error_is_contained_to_its_episode(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = _suite(suite_dir, "crash-1", "ok-1", "ok-2")
    summary = _run(RunConfig(suite=str(root), agent=FLAKY, epochs=2), tmp_path / "run")
    assert summary["episodes"]["finished"] == 6
    assert summary["terminations"]["agent_error"] == 2
    assert summary["terminations"]["completed"] == 4
    assert summary["success"]["successes"] == 4 and summary["success"]["n"] == 6
    with RunReader(tmp_path / "run") as reader:
        crashed = reader.record("crash-1#0")
    assert crashed is not None and "the agent fell over" in (crashed.trajectory.error or "")
    assert crashed.attempts == 1  # agent errors are the agent's fault: never retried


def test_infra_errors_are_retried_and_kept_out_of_the_denominator(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = _suite(suite_dir, "infra-always", "infra-once", "ok")
    config = RunConfig(suite=str(root), agent=FLAKY, retries=2)
    summary = _run(config, tmp_path / "run")
    with RunReader(tmp_path / "run") as reader:
        always = reader.record("infra-always#0")
        once = reader.record("infra-once#0")
        ok = reader.record("ok#0")
    assert always is not None and once is not None and ok is not None
    assert (always.attempts, always.score.termination) == (3, Termination.INFRA_ERROR)
    assert always.infra_errors == ["HTTP 503 from the provider"] * 2
    assert test_agents.ATTEMPTS["infra-always#0"] == 3
    assert (once.attempts, once.score.passed, once.infra_errors) == (
        2,
        True,
        ["HTTP 503 from the provider"],
    )
    assert (ok.attempts, ok.infra_errors) == (1, [])
    assert summary["episodes"]["infra_errors"] == 1
    assert summary["episodes"]["scored"] == 2
    assert summary["success"]["n"] == 2 and summary["success"]["rate"] == 1.0


def test_no_retries_when_told(suite_dir: Callable[..., Path], tmp_path: Path) -> None:
    root = _suite(suite_dir, "infra-always")
    _run(RunConfig(suite=str(root), agent=FLAKY, retries=0), tmp_path / "run")
    assert test_agents.ATTEMPTS["infra-always#0"] == 1


def test_a_slow_agent_times_out_without_holding_up_the_run(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task(id="sleepy", limits={"step_timeout_s": 0.2}), make_task(id="ok")])
    summary = _run(RunConfig(suite=str(root), agent=FLAKY), tmp_path / "run")
    assert summary["terminations"]["timeout"] == 1
    assert summary["success"]["successes"] == 1


def test_run_directory_holds_db_trajectories_and_summary(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = _suite(suite_dir, "a", "b")
    seen: list[str] = []
    runner = Runner(
        RunConfig(suite=str(root), agent="oracle", epochs=2),
        tmp_path / "run",
        on_episode=lambda record: seen.append(record.key),
    )
    summary = asyncio.run(runner.run())
    assert sorted(seen) == ["a#0", "a#1", "b#0", "b#1"]
    lines = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    assert [(t["task_id"], t["epoch"]) for t in map(json.loads, lines)] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("b", 1),
    ]
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == summary
    with RunReader(tmp_path / "run") as reader:
        assert reader.count() == 4
        assert reader.meta()["suite"]["name"] == "mini"


def test_same_seed_same_results_whatever_the_parallelism(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = _suite(suite_dir, "a", "b", "c")
    config = RunConfig(suite=str(root), agent="random", epochs=3, seed=9)
    _run(config, tmp_path / "one", parallel=1)
    _run(config, tmp_path / "four", parallel=4)
    one = (tmp_path / "one" / "trajectories.jsonl").read_text().splitlines()
    four = (tmp_path / "four" / "trajectories.jsonl").read_text().splitlines()
    assert [strip_timing(json.loads(x)) for x in one] == [strip_timing(json.loads(x)) for x in four]


def test_resume_runs_only_the_missing_episodes(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = _suite(suite_dir, "a", "b")
    _run(RunConfig(suite=str(root), agent=FLAKY, tasks=["a"]), tmp_path / "run")
    test_agents.ATTEMPTS.clear()
    with pytest.raises(ResumeError, match="tasks: the run used"):
        _run(RunConfig(suite=str(root), agent=FLAKY), tmp_path / "run")
    # Same configuration: nothing left to run, nothing is run again.
    summary = _run(RunConfig(suite=str(root), agent=FLAKY, tasks=["a"]), tmp_path / "run")
    assert test_agents.ATTEMPTS == {}
    assert summary["episodes"]["finished"] == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"epochs": 3}, "epochs"),
        ({"agent": "noop"}, "agent"),
        ({"seed": 4}, "seed"),
        ({"system_prompt": "Be terse."}, "system_prompt"),
    ],
)
def test_resume_refuses_another_configuration(
    suite_dir: Callable[..., Path], tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    root = _suite(suite_dir, "a")
    base = {"suite": str(root), "agent": "oracle", "epochs": 2}
    _run(RunConfig(**base), tmp_path / "run")
    with pytest.raises(ResumeError) as info:
        _run(RunConfig(**{**base, **change}), tmp_path / "run")
    fields = [p.field for p in info.value.problems]
    assert fields == [field, "fix"]
    # Retries are not part of a run's identity.
    _run(RunConfig(**base, retries=0), tmp_path / "run")


def test_resume_refuses_a_changed_suite(suite_dir: Callable[..., Path], tmp_path: Path) -> None:
    root = _suite(suite_dir, "a")
    config = RunConfig(suite=str(root), agent="oracle")
    _run(config, tmp_path / "run")
    task_file = root / "tasks" / "a.yaml"
    task_file.write_text(task_file.read_text().replace("units", "items"))
    with pytest.raises(ResumeError, match="suite's files changed"):
        _run(config, tmp_path / "run")


def test_the_track_and_identity_of_a_configuration(suite_dir: Callable[..., Path]) -> None:
    root = _suite(suite_dir, "a")
    standard = RunConfig(suite=str(root), agent="oracle")
    custom = RunConfig(suite=str(root), agent="oracle", system_prompt="Be terse.")
    assert standard.track() == "standard"
    assert custom.track().startswith("custom-") and custom.track() != "custom-"
    assert (
        custom.track() == RunConfig(suite=str(root), agent="x", system_prompt="Be terse.").track()
    )
    assert "retries" not in standard.identity()
    assert standard.effective_seed(load_suite(root)) == 11  # the suite's seed
    assert RunConfig(suite=str(root), agent="o", seed=4).effective_seed(load_suite(root)) == 4


def test_the_recorded_platform_is_what_platform_says_without_its_subprocess(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run records platform.platform()'s text, made without starting ``uname -p``."""
    import platform
    import subprocess

    from toolproof.engine.runner import environment

    expected = platform.platform()
    started: list[object] = []
    real = subprocess.Popen.__init__

    def spy(self: object, *args: object, **kwargs: object) -> None:
        started.append(args)
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    assert environment()["platform"] == expected
    assert started == []
