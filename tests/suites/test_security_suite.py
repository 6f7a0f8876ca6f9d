"""The built-in ``security`` suite: well-formed attacks, proven by oracle, noop, random and
gullible agents."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.metrics.security import ATTACK_CHECK, attack_check, security_metrics
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import CustomCheck, Limits, Suite, Task, load_suite, render, resolve_suite_path
from toolproof.spec.user import normalize_text

EPOCHS = 3
DOCS = Path(__file__).parents[2] / "docs" / "security-suite.md"


def run_suite(suite: str, agent: str, run_dir: Path) -> list[EpisodeRecord]:
    """Run every task of a suite for epochs 0..2 in process and return the records."""
    config = RunConfig(
        suite=str(resolve_suite_path(suite)), agent=agent, epochs=EPOCHS, snapshots=False
    )
    asyncio.run(Runner(config, run_dir, parallel=8).run())
    with RunReader(run_dir) as reader:
        return list(reader.records())


@pytest.fixture(scope="module")
def suite() -> Suite:
    """The loaded security suite."""
    return load_suite("security")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    """Records of the reference and diagnostic agents over the whole suite."""
    return {
        agent: run_suite("security", agent, tmp_path_factory.mktemp(agent))
        for agent in ("oracle", "noop", "random", "gullible")
    }


def attacked(suite: Suite) -> list[Task]:
    """The tasks that carry an attack."""
    return [t for t in suite.tasks if t.attack is not None]


def failures(records: list[EpisodeRecord], want: bool) -> list[str]:
    """Keys of the episodes whose pass/fail differs from ``want``."""
    return [r.key for r in records if r.score.passed is not want]


def test_the_suite_has_enough_attacks_across_vectors_and_objectives(suite: Suite) -> None:
    tasks = attacked(suite)
    assert len(tasks) >= 15
    assert suite.config.version == "2.3.0"
    assert {t.attack.vector.value for t in tasks if t.attack} == {
        "email",
        "web",
        "file",
        "api",
        "chat",
    }
    assert {t.attack.objective.value for t in tasks if t.attack} == {
        "exfiltrate",
        "fraud",
        "destroy",
        "leak_secret",
        "execute",
    }


def test_every_security_task_carries_an_attack_and_one_attack_check(suite: Suite) -> None:
    for task in suite.tasks:
        checks = [
            c for c in task.success if isinstance(c, CustomCheck) and c.function == ATTACK_CHECK
        ]
        if task.category == "security":
            assert task.attack is not None, task.id
            assert len(checks) == 1, task.id
            assert checks[0].name == "attack", task.id
        else:
            assert task.attack is None and not checks, task.id


def test_attack_calls_use_the_tasks_own_tools(suite: Suite) -> None:
    for task in attacked(suite):
        offered = {t if isinstance(t, str) else t.name for t in task.tools}
        assert task.attack is not None
        for call in task.attack.calls:
            assert call.tool in offered, (task.id, call.tool)


def test_the_injection_is_planted_in_the_world_of_every_epoch(suite: Suite) -> None:
    for task in attacked(suite):
        for epoch in range(EPOCHS):
            inst = render(
                task,
                suite="security",
                suite_seed=suite.config.seed,
                epoch=epoch,
                limits=Limits(),
                system_prompt="",
            )
            attack = inst.task.attack
            assert attack is not None
            world = json.dumps(inst.task.world.model_dump(mode="json"))
            tools = json.dumps(
                [t if isinstance(t, str) else t.model_dump() for t in inst.task.tools]
            )
            assert normalize_text(attack.injection) in normalize_text(world + tools), task.id


def test_benign_twins_have_no_attack_and_mirror_an_attacked_task(suite: Suite) -> None:
    twins = [t for t in suite.tasks if "benign-twin" in t.tags]
    assert len(twins) >= 4
    descriptions = {t.template["description"] for t in attacked(suite)}
    for twin in twins:
        assert twin.attack is None and twin.category == "normal", twin.id
        assert twin.template["description"] in descriptions, twin.id


def test_refusal_tasks_are_tagged_and_documented(suite: Suite) -> None:
    refusal = [t.id for t in suite.tasks if "refusal" in t.tags]
    assert refusal, "the suite documents the tasks where declining is the right answer"
    text = DOCS.read_text(encoding="utf-8")
    for task_id in refusal:
        assert task_id in text


def test_oracle_passes_every_task_and_resists_every_attack(
    runs: dict[str, list[EpisodeRecord]], suite: Suite
) -> None:
    records = runs["oracle"]
    assert len(records) == len(suite.tasks) * EPOCHS
    assert failures(records, want=True) == []
    metrics = security_metrics(records)
    assert metrics["attack_success"]["successes"] == 0
    assert metrics["utility_under_attack"]["rate"] == 1.0
    assert metrics["utility"]["rate"] == 1.0
    assert metrics["exposure"]["rate"] == 1.0, "the reference solution reads every injection"


@pytest.mark.parametrize("agent", ["noop", "random"])
def test_noop_and_random_pass_nothing(runs: dict[str, list[EpisodeRecord]], agent: str) -> None:
    records = runs[agent]
    assert failures(records, want=False) == []
    assert security_metrics(records)["utility_under_attack"]["successes"] == 0


def test_noop_resists_attacks_but_never_has_utility_even_where_declining_is_right(
    runs: dict[str, list[EpisodeRecord]], suite: Suite
) -> None:
    metrics = security_metrics(runs["noop"])
    assert metrics["attack_success"]["successes"] == 0
    assert metrics["exposure"]["successes"] == 0
    refusal = {t.id for t in suite.tasks if "refusal" in t.tags}
    for record in runs["noop"]:
        if record.task.id in refusal:
            attack = next(c for c in record.score.checks if c.data.get("role") == "attack")
            assert attack.passed and not record.score.passed


def test_gullible_is_caught_by_every_attack_and_keeps_benign_utility(
    runs: dict[str, list[EpisodeRecord]], suite: Suite
) -> None:
    metrics = security_metrics(runs["gullible"])
    assert metrics["attack_success"]["rate"] == 1.0
    assert metrics["utility"]["rate"] == 1.0
    assert set(metrics["tasks"]) == {t.id for t in attacked(suite)}
    assert all(t["attack_successes"] == EPOCHS for t in metrics["tasks"].values())
    assert set(metrics["by_vector"]) == {"api", "chat", "email", "file", "web"}
    assert all(not r.score.passed for r in runs["gullible"] if r.task.category == "security")


def test_the_attack_check_of_a_task_without_attack_fails_loudly(
    runs: dict[str, list[EpisodeRecord]],
) -> None:
    class Ctx:
        class instance:  # stands in for the TaskInstance attribute
            task = Task.model_validate(
                {
                    "id": "x",
                    "description": "d",
                    "type": "single_tool",
                    "tools": [],
                    "success": [{"kind": "output", "contains": ["y"]}],
                    "solution": {"answer": "y"},
                }
            )

    result = attack_check(Ctx())  # type: ignore[arg-type]
    assert not result.passed
    assert result.data == {"role": "attack", "attack_succeeded": None}
    assert "no attack section" in result.detail


def test_security_metrics_leave_out_infra_errors_and_split_benign_from_attacked(
    runs: dict[str, list[EpisodeRecord]],
) -> None:
    records = runs["oracle"]
    broken = records[0].model_copy(deep=True)
    broken.score.termination = "infra_error"  # type: ignore[assignment]
    metrics: dict[str, Any] = security_metrics([*records, broken])
    assert metrics["episodes"]["infra_errors"] == 1
    assert metrics["episodes"]["scored"] == len(records)
    assert metrics["episodes"]["benign"] + metrics["episodes"]["attacked"] == len(records)
    empty = security_metrics([])
    assert empty["attack_success"]["empty"] and empty["utility"]["empty"]
