"""The built-in ``lint`` suite: real linter errors fixed for real, cheats caught, tools pinned.

These tests run the pinned ruff and ESLint in the sandbox, so they need the suite's
environments set up once (``.venv/bin/toolproof env setup lint``; CI does it).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.envs import EnvDrift, EnvError, check_suite, inspect_env, suite_locks
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import Suite, load_suite, resolve_suite_path
from toolproof.spec.lint_checks import LintCheck, ProtectedCheck, SuppressionCheck
from toolproof_helpers import CliResult

AGENTS = Path(__file__).parents[1] / "agents"
if str(AGENTS) not in sys.path:  # the cheaters, as python:lint_cheaters:NAME
    sys.path.insert(0, str(AGENTS))

from lint_cheaters import CHEATERS  # noqa: E402  (importable once tests/agents is on the path)

CHEAT_TASKS = ["py-textkit-cleanup", "ts-component-cleanup"]
CAUGHT_BY = {
    "config": "untouched",
    "lint-script": "untouched",
    "disable-comments": "honest",
    "delete-files": "honest",
}


def _not_ready() -> str | None:
    try:
        check_suite(load_suite("lint"))
    except EnvError as exc:
        return f"the lint suite's tools are not set up ({exc}); run `toolproof env setup lint`"
    return None


NOT_READY = _not_ready()
needs_env = pytest.mark.skipif(NOT_READY is not None, reason=NOT_READY or "")


def run(
    agent: str, run_dir: Path, *, suite: Path | None = None, **config: object
) -> list[EpisodeRecord]:
    """Run ``agent`` over the suite (or some of its tasks) with 4 episodes in flight."""
    path = str(suite or resolve_suite_path("lint"))
    settings = RunConfig.model_validate(
        {"suite": path, "agent": agent, "snapshots": False, "retries": 0, **config}
    )
    asyncio.run(Runner(settings, run_dir, parallel=4).run())
    with RunReader(run_dir) as reader:
        return list(reader.records())


@pytest.fixture(scope="module")
def suite() -> Suite:
    """The loaded lint suite."""
    return load_suite("lint")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> list[EpisodeRecord]:
    """The reference solutions over every task."""
    return run("oracle", tmp_path_factory.mktemp("oracle"))


@pytest.fixture(scope="module")
def cheats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    """Every cheater on a Python and a TypeScript task."""
    return {
        name: run(
            f"python:lint_cheaters:{cls.__name__}",
            tmp_path_factory.mktemp(name),
            tasks=CHEAT_TASKS,
        )
        for name, cls in CHEATERS.items()
    }


def test_the_suite_has_two_ecosystems_and_every_kind_of_error(suite: Suite) -> None:
    assert len(suite.tasks) >= 12
    linters = {next(c for c in t.success if isinstance(c, LintCheck)).linter for t in suite.tasks}
    assert linters == {"ruff", "eslint"}
    tags = [tag for task in suite.tasks for tag in task.tags]
    for kind in ("single-file", "several-files", "coordinated"):
        assert tags.count(kind) >= 3, kind
    for task in suite.tasks:
        text = task.description
        assert "do not silence the linter" in text and "do not delete" in text, task.id
        assert '"remaining_errors"' in text, task.id
        assert {"read_file", "write_file", "list_files", "run_command"} <= set(map(str, task.tools))
        kinds = {c.kind for c in task.success}
        assert {"lint", "protected", "no_suppressions", "lint_answer", "change_budget"} <= kinds
        assert all(c.veto for c in task.success if isinstance(c, ProtectedCheck | SuppressionCheck))
        assert task.sandbox is not None and task.sandbox.toolenv is not None


def test_every_task_names_a_version_file_with_its_starting_count(suite: Suite) -> None:
    locks = suite_locks(suite)
    assert {p.parent.name for p in locks} == {"python", "node"}
    covered = sorted(t for ids in locks.values() for t in ids)
    assert covered == sorted(t.id for t in suite.tasks)
    for lock_path, task_ids in locks.items():
        status = inspect_env(lock_path)
        assert sorted(status.lock.baseline) == sorted(task_ids)
        assert all(n > 0 for n in status.lock.baseline.values())
        assert status.lock.digest == status.lock.expected_digest()


def test_the_projects_ship_no_caches_or_installed_packages(suite: Suite) -> None:
    junk = {"__pycache__", ".ruff_cache", "node_modules", ".eslintcache"}
    for path in (suite.root / "projects").rglob("*"):
        assert not junk & set(path.parts), path


@needs_env
def test_the_oracle_is_perfect_on_every_task(oracle: list[EpisodeRecord], suite: Suite) -> None:
    assert sorted(r.task.id for r in oracle) == sorted(t.id for t in suite.tasks)
    for record in oracle:
        failed = [(c.name, c.detail) for c in record.score.checks if not c.passed]
        assert record.score.level == "perfect", (record.key, record.trajectory.error, failed)


@needs_env
def test_the_lint_error_curve_is_in_every_oracle_trajectory(oracle: list[EpisodeRecord]) -> None:
    locks = {t: s for lock in suite_locks(load_suite("lint")) for s in [inspect_env(lock)]
             for t in s.lock.baseline}  # fmt: skip
    for record in oracle:
        curve = [s.annotations["lint_errors"] for s in record.trajectory.steps
                 if "lint_errors" in s.annotations]  # fmt: skip
        assert curve == [locks[record.task.id].lock.baseline[record.task.id], 0], record.key
        lint = next(c for c in record.score.checks if c.kind == "lint")
        assert [n for _, n in lint.data["curve"]] == curve
        assert lint.data["env"]["digest"] == locks[record.task.id].lock.digest


@needs_env
def test_noop_fails_every_task(tmp_path: Path, suite: Suite) -> None:
    records = run("noop", tmp_path)
    assert len(records) == len(suite.tasks)
    for record in records:
        assert record.score.level == "fail" and record.score.fraction == 0, record.key


@needs_env
@pytest.mark.parametrize("name", sorted(CHEATERS))
def test_every_cheat_is_caught(name: str, cheats: dict[str, list[EpisodeRecord]]) -> None:
    records = cheats[name]
    assert sorted(r.task.id for r in records) == sorted(CHEAT_TASKS)
    for record in records:
        vetoed = [c.name for c in record.score.checks if c.veto]
        assert record.score.level == "fail" and vetoed, (record.key, record.score.checks)
        assert record.score.termination == "completed"
        assert CAUGHT_BY[name] in vetoed, (record.key, vetoed)
        assert json.loads(record.trajectory.final_answer or "")["remaining_errors"] == 0


def _copy_with_ruff(tmp_path: Path, version: str, *, redigest: bool) -> Path:
    """A copy of the suite whose python version file pins another ruff."""
    copy = tmp_path / "lint"
    shutil.copytree(resolve_suite_path("lint"), copy)
    lock_path = copy / "envs" / "python" / "env.lock.json"
    data = json.loads(lock_path.read_text())
    data["pip"]["ruff"] = version
    if redigest:
        from toolproof.envs import EnvLock

        lock = EnvLock.model_validate(data)
        data["digest"] = lock.expected_digest()
    lock_path.write_text(json.dumps(data))
    return copy


@needs_env
@pytest.mark.parametrize("redigest", [True, False])
def test_a_changed_linter_version_is_drift_that_stops_the_run(
    tmp_path: Path, redigest: bool
) -> None:
    copy = load_suite(_copy_with_ruff(tmp_path, "0.7.0", redigest=redigest))
    with pytest.raises(EnvDrift, match=r"ruff 0\.7\.0 → 0\.6\.9") as caught:
        check_suite(copy)
    assert "ruff 0.7.0 → 0.6.9" in caught.value.changes
    warned: list[str] = []
    check_suite(copy, allow_drift=True, warn=warned.append)
    assert len(warned) == 1 and "ruff 0.7.0 → 0.6.9" in warned[0]


@needs_env
def test_episodes_refuse_drift_unless_allowed(tmp_path: Path) -> None:
    copy = _copy_with_ruff(tmp_path, "0.7.0", redigest=True)
    [refused] = run("oracle", tmp_path / "refused", suite=copy, tasks=["py-unused-imports"])
    assert refused.score.termination == "infra_error"
    assert "ruff 0.7.0 → 0.6.9" in (refused.trajectory.error or "")
    assert "--allow-drift" in (refused.trajectory.error or "")
    [allowed] = run(
        "oracle", tmp_path / "allowed", suite=copy, tasks=["py-unused-imports"], allow_drift=True
    )
    lint = next(c for c in allowed.score.checks if c.kind == "lint")
    assert allowed.score.level == "perfect" and lint.data["env"]["drift"] == ["ruff 0.7.0 → 0.6.9"]


def test_a_missing_environment_is_an_infra_error_naming_the_set_up(tmp_path: Path) -> None:
    records = run(
        "oracle", tmp_path / "run", tasks=["ts-button-cleanup"], env_cache=str(tmp_path / "empty")
    )
    [record] = records
    assert record.score.termination == "infra_error" and record.score.level == "fail"
    assert "`toolproof env setup lint`" in (record.trajectory.error or "")
    assert record.trajectory.steps == []  # the agent never started


@needs_env
def test_setup_checks_every_starting_count(
    tmp_path: Path, invoke: Callable[..., CliResult]
) -> None:
    copy = tmp_path / "lint"
    shutil.copytree(resolve_suite_path("lint"), copy)
    lock_path = copy / "envs" / "node" / "env.lock.json"
    data = json.loads(lock_path.read_text())
    data["baseline"]["ts-theme-hook"] += 1
    lock_path.write_text(json.dumps(data))
    result = invoke("env", "setup", copy)
    assert result.code == 1, result.out + result.err
    assert "lint-python: reused" in result.out and "6 tasks start with the recorded" in result.out
    expected = data["baseline"]["ts-theme-hook"]
    assert f"ts-theme-hook: the version file records {expected}, the linter finds 2" in result.err
    assert result.err.count("the version file records") == 1
