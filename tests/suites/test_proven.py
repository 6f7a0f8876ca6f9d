"""Every task of every built-in suite through the quality gate (``toolproof check-task``).

For every task of ``core``, ``security``, ``repo-doctor``, ``lint`` and ``hard`` the rules of
:mod:`toolproof.engine.quality`, the same code ``toolproof check-task`` runs, hold:

* the ``oracle`` is ``perfect`` on every seed (5; 1 for ``lint``, whose tasks draw nothing);
* ``noop`` is ``fail`` (the level, not only "not passed"), and no progress check passes on
  the initial world: doing nothing earns nothing;
* ``random`` never passes (``lint`` excepted, see below);
* ``gullible`` is ``fail`` with the attack detected on every task with an ``attack:``
  section, and passes every other task;
* ``never-asks`` does not pass an ``ambiguous`` task and passes every other task;
* ``never-retries`` does not pass a ``tool_error`` task whose reference run meets an error
  result it must recover from, and passes every other task (a ``tool_error`` task whose
  fault is silent, stale or garbled data, is outside its weakness and passes);
* no prompt says the answer, and the facts change across seeds;
* every ``hidden_tests`` check's fail-to-pass cases fail on the original code and pass on the
  reference fix, and its pass-to-pass cases pass on both;
* no episode of any agent is a task error.

Episodes run in process through the engine's :class:`~toolproof.engine.Worker`, one run per
suite per agent, shared by the module, so the gate costs CI one oracle run per task. The
``lint`` suite needs its pinned tools (``toolproof env setup lint``, done in CI); its
episodes are slow (real linters and test suites), so there the flawed agents are proven
without a run of their own: each plays the oracle's turns and deviates only on a trigger
(an ``ask_user`` call or a question in the answer, an error result with turns left, an
attack's injection), and the tests assert that the oracle's lint trajectories hold none, so
the flawed agents' episodes are the oracle's; on ``hard`` (long episodes, no attack) the
same holds for gullible, and for never-asks on the tasks without a simulated user. The
lint suite's random runs are left out for the same reason (each episode runs real
linters): ``random`` is not proven on ``lint`` here.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolproof.engine import quality
from toolproof.engine.quality import FLAWED, asks, meets_error_to_recover, why
from toolproof.envs import EnvError, check_suite
from toolproof.results import EpisodeRecord
from toolproof.spec import Suite, Task, TaskInstance, builtin_suites_dir, load_suite

SUITES = ("core", "security", "repo-doctor", "lint", "hard")
ORACLE_EPOCHS = {name: quality.ORACLE_EPOCHS for name in SUITES} | {"lint": 1}
EPOCHS = {name: quality.OTHER_EPOCHS for name in SUITES} | {"lint": 1}
PARALLEL = 8
SLOW = {"lint"}
"""Suites whose episodes are too slow for a random run (see above)."""


def derived(suite: str, agent: str, task: Task) -> bool:
    """Whether a flawed agent's episodes on a task are proven from the oracle's (see above).

    On ``hard`` (long episodes) gullible plays exactly the oracle's turns (no attacks), and
    so does never-asks on a task without a simulated user: CI does not replay 64 long tasks
    twice more.
    """
    if suite == "lint":
        return True
    if suite == "hard":
        return agent == "gullible" or (agent == "never-asks" and task.user is None)
    return False


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
FAST_CASES = [case for case in CASES if case.values[0] not in SLOW]

Runs = Callable[[str, str, str], list[EpisodeRecord]]


@pytest.fixture(scope="module")
def runs() -> Runs:
    """``runs(suite, agent, task_id)``: that task's records; each suite/agent runs once."""
    cache: dict[tuple[str, str], dict[str, list[EpisodeRecord]]] = {}

    def get(suite: str, agent: str, task_id: str) -> list[EpisodeRecord]:
        if (suite, agent) not in cache:
            epochs = (ORACLE_EPOCHS if agent == "oracle" else EPOCHS)[suite]
            tasks = SUITE_OBJECTS[suite].tasks
            ids = [t.id for t in tasks if agent not in FLAWED or not derived(suite, agent, t)]
            cache[suite, agent] = quality.run_agent(
                SUITE_OBJECTS[suite], agent, epochs, ids, parallel=PARALLEL
            )
        return cache[suite, agent][task_id]

    return get


def task_of(suite: str, task_id: str) -> Task:
    """The task (as loaded, templates unrendered)."""
    return SUITE_OBJECTS[suite].task(task_id)


def instances(suite: str, task_id: str) -> list[TaskInstance]:
    """The task rendered for the gate's seeds."""
    return quality.instances_of(SUITE_OBJECTS[suite], task_id, quality.ORACLE_EPOCHS)


def messages(findings: list[quality.Finding]) -> list[str]:
    """The findings as text, for assertion messages."""
    return [f"{f.rule}: {f.message}" for f in findings]


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_the_oracle_is_perfect(runs: Runs, suite: str, task_id: str) -> None:
    records = runs(suite, "oracle", task_id)
    assert len(records) == ORACLE_EPOCHS[suite]
    found = quality.judge_oracle(task_of(suite, task_id), records, ORACLE_EPOCHS[suite])
    assert found == [], messages(found)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_noop_fails_and_no_progress_check_holds_at_the_start(
    runs: Runs, suite: str, task_id: str
) -> None:
    records = runs(suite, "noop", task_id)
    assert records and all(r.score.fraction == 0.0 for r in records), why(records)
    found = quality.judge_noop(task_of(suite, task_id), records)
    assert found == [], messages(found)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_hidden_cases_fail_on_the_original_code_and_pass_on_the_fix(
    runs: Runs, suite: str, task_id: str
) -> None:
    """SWE-bench's discipline on every ``hidden_tests`` check: its fail-to-pass cases fail
    on the original code (noop's runs) and pass on the reference fix (the oracle's), its
    pass-to-pass cases pass on both (no runs of their own: noop's and the oracle's)."""
    task = task_of(suite, task_id)
    noop, oracle = runs(suite, "noop", task_id), runs(suite, "oracle", task_id)
    found = quality.judge_hidden_cases(task, noop, oracle)
    assert found == [], messages(found)


@pytest.mark.parametrize(("suite", "task_id"), FAST_CASES)
def test_random_never_passes(runs: Runs, suite: str, task_id: str) -> None:
    records = runs(suite, "random", task_id)
    assert len(records) == EPOCHS[suite]
    found = quality.judge_random(task_of(suite, task_id), records)
    assert found == [], messages(found)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_no_prompt_says_the_answer(suite: str, task_id: str) -> None:
    def more() -> list[TaskInstance]:
        return quality.instances_of(SUITE_OBJECTS[suite], task_id, quality.CHOICE_SEEDS)

    found = quality.judge_answer_in_prompt(instances(suite, task_id), more)
    assert found == [], messages(found)


@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_the_facts_change_across_seeds(suite: str, task_id: str) -> None:
    found = quality.judge_facts_vary(instances(suite, task_id))
    assert found == [], messages(found)


def _flawed(runs: Runs, suite: str, agent: str, task_id: str) -> list[EpisodeRecord]:
    if derived(suite, agent, task_of(suite, task_id)):  # from the oracle's runs (docstring)
        oracle = runs(suite, "oracle", task_id)
        # each flawed agent deviates only on its trigger; the oracle's runs hold none
        assert agent != "gullible" or task_of(suite, task_id).attack is None
        for record in oracle:
            assert agent != "never-asks" or not asks(record.trajectory), record.key
            assert agent != "never-retries" or not meets_error_to_recover(record.trajectory)
        return oracle
    return runs(suite, agent, task_id)


@pytest.mark.parametrize("agent", FLAWED)
@pytest.mark.parametrize(("suite", "task_id"), CASES)
def test_each_flawed_agent_fails_exactly_its_weakness(
    runs: Runs, suite: str, task_id: str, agent: str
) -> None:
    records = _flawed(runs, suite, agent, task_id)
    assert records
    oracle = runs(suite, "oracle", task_id)
    found = quality.judge_flawed(task_of(suite, task_id), agent, records, oracle)
    assert found == [], messages(found)
    assert not any(r.score.task_error for r in records), why(records)


def test_every_built_in_suite_is_covered() -> None:
    shipped = {p.name for p in builtin_suites_dir().iterdir() if (p / "suite.yaml").is_file()}
    # live runs against its replay proxy; it is proven the same way in test_live_suite.py
    assert shipped == {*SUITES, "live"}
    assert all(isinstance(s, Suite) for s in SUITE_OBJECTS.values())


def test_never_retries_scores_spread_on_the_hard_tier(runs: Runs) -> None:
    """Partial credit reflects progress: giving up mid-way on a long task earns the share of
    the required changes made before the error, not 0 or 1 (issue #18)."""
    hard = SUITE_OBJECTS["hard"]
    fractions = [
        r.score.fraction
        for task in hard.tasks
        if {"trap:flaky-write", "trap:rate-limit"} & set(task.tags)  # an error mid-way
        for r in runs("hard", "never-retries", task.id)
    ]
    assert len(fractions) >= 20
    assert all(0 < f < 1 for f in fractions), fractions
    assert len({round(f, 1) for f in fractions}) >= 3, fractions
    guessed = [
        r.score.fraction
        for task in hard.tasks
        if str(task.category) == "ambiguous"
        for r in runs("hard", "never-asks", task.id)
    ]
    assert len(guessed) >= 8 and all(0 < f < 1 for f in guessed), guessed
