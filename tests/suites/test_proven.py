"""Every task of every built-in suite, proven at both ends and against each flawed agent.

For every task of ``core``, ``security``, ``repo-doctor`` and ``lint``:

* the ``oracle`` is ``perfect`` in every epoch;
* ``noop`` is ``fail`` (the level, not only "not passed"): doing nothing earns nothing;
* ``gullible`` is ``fail`` with the attack detected on every task with an ``attack:``
  section, and passes every other task;
* ``never-asks`` does not pass an ``ambiguous`` task and passes every other task;
* ``never-retries`` does not pass a ``tool_error`` task whose reference run meets an error
  result it must recover from, and passes every other task (a ``tool_error`` task whose
  fault is silent, stale or garbled data, is outside its weakness and passes);
* no episode of any agent is a task error.

Episodes run in process through the engine's :class:`~toolproof.engine.Worker`, one run per
suite per agent, shared by the module. The ``lint`` suite needs its pinned tools
(``toolproof env setup lint``, done in CI); its episodes are slow (real linters and test
suites), so there the flawed agents are proven without a run of their own: each plays the
oracle's turns and deviates only on a trigger (an ``ask_user`` call or a question in the
answer, an error result with turns left, an attack's injection), and the tests assert that
the oracle's lint trajectories hold none, so the flawed agents' episodes are the oracle's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from toolproof.agents.builtin.flawed import ASK_TOOL, is_error
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.envs import EnvError, check_suite
from toolproof.results import EpisodeRecord
from toolproof.scoring import Level
from toolproof.spec import Suite, Task, builtin_suites_dir, load_suite
from toolproof.trajectory import Message, Trajectory

SUITES = ("core", "security", "repo-doctor", "lint")
FLAWED = ("never-asks", "never-retries", "gullible")
EPOCHS = {"core": 2, "security": 2, "repo-doctor": 2, "lint": 1}
PARALLEL = 8
SLOW = {"lint"}
"""Suites whose flawed agents are proven from the oracle's trajectories (see above)."""


def _lint_not_ready() -> str | None:
    try:
        check_suite(load_suite("lint"))
    except EnvError as exc:
        return f"the lint suite's tools are not set up ({exc}); run `toolproof env setup lint`"
    return None


LINT_NOT_READY = _lint_not_ready()
SUITE_OBJECTS = {name: load_suite(builtin_suites_dir() / name) for name in SUITES}
CASES = [
    pytest.param(
        name,
        task.id,
        id=f"{name}/{task.id}",
        marks=[pytest.mark.skipif(LINT_NOT_READY is not None, reason=LINT_NOT_READY or "")]
        if name == "lint"
        else [],
    )
    for name, suite in SUITE_OBJECTS.items()
    for task in suite.tasks
]


def run_suite(name: str, agent: str) -> dict[str, list[EpisodeRecord]]:
    """Every task of a built-in suite for its epochs, in process; records by task id."""
    suite = SUITE_OBJECTS[name]
    config = RunConfig(
        suite=str(suite.root), agent=agent, epochs=EPOCHS[name], snapshots=False, retries=0
    )
    worker = Worker(config, None, suite)
    jobs = [EpisodeJob(t.id, e) for t in suite.tasks for e in range(EPOCHS[name])]

    async def all_jobs() -> list[EpisodeRecord]:
        slots = asyncio.Semaphore(PARALLEL)

        async def one(job: EpisodeJob) -> EpisodeRecord:
            async with slots:
                return await worker.run(job)

        return list(await asyncio.gather(*(one(job) for job in jobs)))

    out: dict[str, list[EpisodeRecord]] = {}
    for record in asyncio.run(all_jobs()):
        out.setdefault(record.task.id, []).append(record)
    return out


Runs = Callable[[str, str, str], list[EpisodeRecord]]


@pytest.fixture(scope="module")
def runs() -> Runs:
    """``runs(suite, agent, task_id)``: that task's records; each suite/agent runs once."""
    cache: dict[tuple[str, str], dict[str, list[EpisodeRecord]]] = {}

    def get(suite: str, agent: str, task_id: str) -> list[EpisodeRecord]:
        if (suite, agent) not in cache:
            cache[suite, agent] = run_suite(suite, agent)
        return cache[suite, agent][task_id]

    return get


def task_of(suite: str, task_id: str) -> Task:
    """The task (as loaded, templates unrendered)."""
    return SUITE_OBJECTS[suite].task(task_id)


def why(records: list[EpisodeRecord]) -> list[str]:
    """What each record's failed checks and errors say, for assertion messages."""
    return [
        f"{r.key} {r.score.level.value}: "
        f"{[f'{c.name}: {c.detail}' for c in r.score.checks if not c.passed]} "
        f"{r.trajectory.error or ''}"
        for r in records
    ]


def meets_error_to_recover(trajectory: Trajectory) -> bool:
    """Whether an error result came while the agent still had calls to make."""
    steps = [s for s in trajectory.steps if s.message.tool_calls]
    return any(
        any(is_error(Message(role="tool", content=r.content)) for r in s.results)
        for s in steps[:-1]
    )


def asks(trajectory: Trajectory) -> bool:
    """Whether the agent questioned the user (an ask_user call or a question in its answer)."""
    called = any(c.name == ASK_TOOL for c, _ in trajectory.tool_calls())
    return called or "?" in (trajectory.final_answer or "")


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_the_oracle_is_perfect(runs: Runs, suite: str, task_id: str) -> None:
    records = runs(suite, "oracle", task_id)
    assert len(records) == EPOCHS[suite]
    assert all(r.score.level is Level.PERFECT for r in records), why(records)
    assert not any(r.score.task_error for r in records)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_noop_fails(runs: Runs, suite: str, task_id: str) -> None:
    records = runs(suite, "noop", task_id)
    levels = {r.score.level for r in records}
    assert levels == {Level.FAIL}, why(records)
    assert all(r.score.fraction == 0.0 for r in records), [r.score.fraction for r in records]
    assert not any(r.score.task_error or r.infra_error for r in records)


def _flawed(runs: Runs, suite: str, agent: str, task_id: str) -> list[EpisodeRecord]:
    if suite in SLOW:  # proven from the oracle's trajectories (module docstring)
        oracle = runs(suite, "oracle", task_id)
        assert task_of(suite, task_id).attack is None
        for record in oracle:
            assert not asks(record.trajectory), record.key
            assert not meets_error_to_recover(record.trajectory), record.key
        return oracle
    return runs(suite, agent, task_id)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_gullible_fails_exactly_the_attacked_tasks(runs: Runs, suite: str, task_id: str) -> None:
    records = _flawed(runs, suite, "gullible", task_id)
    if task_of(suite, task_id).attack is not None:
        assert {r.score.level for r in records} == {Level.FAIL}, why(records)
        attack = [c for r in records for c in r.score.checks if c.data.get("role") == "attack"]
        assert len(attack) == len(records)
        assert all(c.data["attack_succeeded"] and c.veto for c in attack), attack
    else:
        assert all(r.score.passed for r in records), why(records)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_never_asks_fails_exactly_the_ambiguous_tasks(runs: Runs, suite: str, task_id: str) -> None:
    records = _flawed(runs, suite, "never-asks", task_id)
    if str(task_of(suite, task_id).category) == "ambiguous":
        assert not any(r.score.passed for r in records), why(records)
    else:
        assert all(r.score.passed for r in records), why(records)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_never_retries_fails_exactly_the_tool_errors_to_recover_from(
    runs: Runs, suite: str, task_id: str
) -> None:
    records = _flawed(runs, suite, "never-retries", task_id)
    oracle = runs(suite, "oracle", task_id)
    category = str(task_of(suite, task_id).category)
    for record, reference in zip(records, oracle, strict=True):
        if category == "tool_error" and meets_error_to_recover(reference.trajectory):
            assert not record.score.passed, why([record])
        else:
            # outside tool_error no reference run may need a retry; silent faults pass
            assert category == "tool_error" or not meets_error_to_recover(reference.trajectory)
            assert record.score.passed, why([record])


def test_every_built_in_suite_is_covered() -> None:
    shipped = {p.name for p in builtin_suites_dir().iterdir() if (p / "suite.yaml").is_file()}
    # live runs against its replay proxy; it is proven the same way in test_live_suite.py
    assert shipped == {*SUITES, "live"}
    assert all(isinstance(s, Suite) for s in SUITE_OBJECTS.values())
