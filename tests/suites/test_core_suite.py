"""The ``core`` suite as a whole: valid, proven by the oracle, failed by doing nothing or guessing,
and shaped as promised (categories, domains, types by difficulty, a clear difficulty gradient).

Every episode runs in process through the engine's :class:`~toolproof.engine.Worker` (what
the Runner runs, without writing a run store), eight at a time; the module takes seconds.
Tasks with a simulated user (``user:``, under ``tasks/ambiguous/``) must pass and fail here
like every other task; their shape is tested in ``test_ambiguous_tasks.py``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import (
    Limits,
    SolutionCall,
    StateCheck,
    Suite,
    Task,
    builtin_suites_dir,
    load_suite,
    render,
)
from toolproof.tools import resolve_tools
from toolproof.trajectory import ToolKind

CORE = builtin_suites_dir() / "core"
EPOCHS = 3
PARALLEL = 8
RANDOM_SEEDS = (0, 1, 2)
RANDOM_PASSABLE = "random-passable"
"""Tag of a task that a random agent may pass (documented in the task; keep to ~0)."""
CATEGORIES = ("normal", "edge", "tool_error", "ambiguous")
"""Categories that need at least 15 tasks (security lives mostly in its own suite)."""
TYPE_DIFFICULTIES = {
    "single_tool": {1, 2, 3},
    "multi_step": {2, 3},  # one call is not a multi-step task
    "conditional": {1, 2, 3},
    "exploration": {1, 2, 3},
    "tool_learning": {1, 2, 3},
}


def run(suite: Suite, agent: str, **options: Any) -> list[EpisodeRecord]:
    """Run every task of the core suite for epochs 0..2 in process and return the records."""
    config = RunConfig(
        suite=str(CORE), agent=agent, agent_options=options, epochs=EPOCHS, snapshots=False
    )
    worker = Worker(config, None, suite)
    jobs = [EpisodeJob(t.id, epoch) for t in suite.tasks for epoch in range(EPOCHS)]

    async def all_jobs() -> list[EpisodeRecord]:
        slots = asyncio.Semaphore(PARALLEL)

        async def one(job: EpisodeJob) -> EpisodeRecord:
            async with slots:
                return await worker.run(job)

        return list(await asyncio.gather(*(one(job) for job in jobs)))

    return asyncio.run(all_jobs())


@pytest.fixture(scope="module")
def suite() -> Suite:
    """The loaded core suite."""
    return load_suite(CORE)


@pytest.fixture(scope="module")
def runs(suite: Suite) -> dict[str, list[EpisodeRecord]]:
    """Records of oracle, noop and random (seeds 0, 1, 2), every task for epochs 0..2."""
    out = {"oracle": run(suite, "oracle"), "noop": run(suite, "noop")}
    for seed in RANDOM_SEEDS:
        out[f"random-{seed}"] = run(suite, "random", seed=seed)
    return out


def instances(task: Task, suite: Suite, epochs: int = 5) -> list[Task]:
    """The task rendered for epochs 0..epochs-1."""
    return [
        render(
            task,
            suite=suite.name,
            suite_seed=suite.config.seed,
            epoch=epoch,
            limits=Limits(),
            system_prompt="",
        ).task
        for epoch in range(epochs)
    ]


def flat_calls(task: Task) -> list[SolutionCall]:
    """The reference calls in order, parallel turns flattened."""
    return [c for item in task.solution.calls for c in (item if isinstance(item, list) else [item])]


def distinct_calls(task: Task) -> int:
    """Reference calls, not counting an immediate repeat of the same call (a retry)."""
    count, previous = 0, None
    for call in flat_calls(task):
        key = (call.tool, repr(sorted(call.args.items())))
        count += key != previous
        previous = key
    return count


def own(suite: Suite) -> list[Task]:
    """Tasks without a simulated user (those count ask_user turns; see test_ambiguous_tasks)."""
    return [t for t in suite.tasks if t.user is None]


def test_validate_accepts_the_suite(invoke: Callable[..., Any]) -> None:
    result = invoke("validate", CORE)
    assert result.code == 0, result.err
    assert "valid" in result.out


def test_list_shows_the_counts(invoke: Callable[..., Any], suite: Suite) -> None:
    result = invoke("list", "--suite", "core")
    assert result.code == 0, result.err
    assert f"core v{suite.config.version}: {len(suite.tasks)} tasks" in result.out
    for field in ("type", "category", "difficulty", "domain"):
        assert f"by {field}:" in result.out
    assert f"normal {sum(t.category == 'normal' for t in suite.tasks)}" in result.out


def test_size_categories_and_domains(suite: Suite) -> None:
    # The changelog has an entry for the version in suite.yaml (a meaning change bumps both).
    changelog = (suite.root / "CHANGELOG.md").read_text()
    assert f"## {suite.config.version}" in changelog
    assert suite.config.version.startswith("3.")
    assert len(suite.tasks) >= 120
    categories = Counter(str(t.category) for t in suite.tasks)
    for category in CATEGORIES:
        assert categories[category] >= 15, categories
    assert categories["security"] >= 3, categories
    domains = Counter(t.domain for t in suite.tasks)
    assert len([d for d, n in domains.items() if n >= 10]) >= 6, domains


def test_every_type_at_every_sensible_difficulty(suite: Suite) -> None:
    seen = {(str(t.type), t.difficulty) for t in own(suite)}
    missing = [
        (kind, level)
        for kind, levels in TYPE_DIFFICULTIES.items()
        for level in levels
        if (kind, level) not in seen
    ]
    assert missing == []


def test_difficulty_follows_the_number_of_calls(suite: Suite) -> None:
    """1: one call (a retry of it allowed); 2: up to five; 3: ten or more, in every epoch."""
    wrong = []
    for template in own(suite):
        counts = [distinct_calls(task) for task in instances(template, suite)]
        level = template.difficulty
        fits = {
            1: all(n == 1 for n in counts),
            2: all(1 <= n <= 5 for n in counts) and max(counts) >= 2,
            3: all(n >= 10 for n in counts),
        }[level]
        if not fits:
            wrong.append(f"{template.id}: difficulty {level}, reference calls {counts}")
    assert wrong == []


def test_parameters_change_the_task_between_epochs(suite: Suite) -> None:
    """No answer can be memorised: every task but the two classic ones renders differently."""
    fixed = [
        t.id
        for t in suite.tasks
        if "classic" not in t.tags
        and len({i.model_dump_json() for i in instances(t, suite, epochs=4)}) < 2
    ]
    assert fixed == []


def test_tasks_that_write_guard_against_collateral_damage(suite: Suite) -> None:
    """A reference solution that writes implies a state check with unchanged_elsewhere."""
    unguarded = []
    for task in own(suite):
        kinds = {tool.schema.name: tool.schema.kind for tool in resolve_tools(task)}
        writes = any(kinds.get(c.tool) is ToolKind.WRITE for c in flat_calls(task))
        guarded = any(isinstance(c, StateCheck) and c.unchanged_elsewhere for c in task.success)
        if writes and not guarded:
            unguarded.append(task.id)
    assert unguarded == []


def test_every_task_makes_at_least_one_reference_call(suite: Suite) -> None:
    assert [t.id for t in suite.tasks if not flat_calls(t)] == []


def test_oracle_passes_every_task(runs: dict[str, list[EpisodeRecord]], suite: Suite) -> None:
    records = runs["oracle"]
    assert len(records) == len(suite.tasks) * EPOCHS
    failed = [
        f"{r.key}: {[c.detail for c in r.score.checks if not c.passed]} {r.trajectory.error or ''}"
        for r in records
        if not r.score.passed
    ]
    assert failed == []


def test_noop_passes_nothing(runs: dict[str, list[EpisodeRecord]]) -> None:
    assert [r.key for r in runs["noop"] if r.score.passed] == []


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_passes_nothing_that_needs_skill(
    runs: dict[str, list[EpisodeRecord]], seed: int
) -> None:
    lucky = [
        r.key
        for r in runs[f"random-{seed}"]
        if r.score.passed and RANDOM_PASSABLE not in r.task.tags
    ]
    assert lucky == []


def test_random_passable_tasks_are_rare(suite: Suite) -> None:
    assert len([t for t in suite.tasks if RANDOM_PASSABLE in t.tags]) <= 2
