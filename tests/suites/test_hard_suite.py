"""The ``hard`` tier's shape (issue #18): long reference solutions, labelled traps, written
policies guarded by checks, and partial credit per required change. (That the task files are
exactly what ``scripts/gen_hard_suite.py`` writes from ``scripts/hard_families/`` is
``tests/scripts/test_gen_hard_suite.py``; every task also goes through the quality gate in
``test_proven.py``, which also shows that never-retries' scores spread.)"""

from __future__ import annotations

import asyncio

import pytest

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import ScriptedAgent, reference_turns
from toolproof.cli._task_stats import suite_stats
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring.roles import Role, static_role
from toolproof.spec import (
    Limits,
    ProcessCheck,
    SolutionCall,
    Suite,
    builtin_suites_dir,
    load_suite,
    render,
)


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(builtin_suites_dir() / "hard")


def test_sixty_long_tasks_fifteen_of_them_very_long(suite: Suite) -> None:
    stats = suite_stats(suite)
    assert len(stats) >= 60
    assert min(s.reference_calls for s in stats) >= 15, sorted(
        (s.reference_calls, s.task_id) for s in stats
    )[:3]
    assert len([s for s in stats if s.reference_calls >= 40]) >= 15
    assert all(t.difficulty == 3 for t in suite.tasks)


def test_every_task_labels_its_traps_and_guards_a_policy_or_collateral(suite: Suite) -> None:
    for task in suite.tasks:
        traps = [t for t in task.tags if t.startswith("trap:")]
        assert traps, task.id
        guards = [c for c in task.success if static_role(c) is Role.GUARD]
        assert any(getattr(c, "unchanged_elsewhere", False) for c in task.success), task.id
        if "trap:policy-shortcut" in task.tags:  # the shortest path breaks the written policy
            assert any(isinstance(c, ProcessCheck) and c.must_not_call for c in guards), task.id


def test_credit_is_split_over_the_required_changes(suite: Suite) -> None:
    for task in suite.tasks:
        progress = [c for c in task.success if static_role(c) is Role.PROGRESS]
        assert len(progress) >= 6, (task.id, len(progress))


def test_the_domains_the_issue_names_are_covered(suite: Suite) -> None:
    assert {t.domain for t in suite.tasks} >= {"api", "banking", "database", "email"}
    tools = {t if isinstance(t, str) else t.name for task in suite.tasks for t in task.tools}
    assert {"sql_query", "http_request", "create_event", "pay_payee", "read_file"} <= tools
    assert len([t for t in suite.tasks if str(t.category) == "tool_error"]) >= 10


_MAIL_READS = {"list_emails", "search_emails", "read_email"}


def test_reading_the_mailbox_is_never_collateral_damage(suite: Suite) -> None:
    """A task that offers a mail read tool starts with an ``emails`` collection: reading an
    absent one creates it, which the collateral-damage guard would score as damage."""
    for task in suite.tasks:
        tools = {t if isinstance(t, str) else t.name for t in task.tools}
        if tools & _MAIL_READS:
            assert "emails" in task.world.records, task.id
    inst = render(
        suite.task("hard-sql-dunning-01"),
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=0,
        limits=Limits(),
        system_prompt="",
    )
    turns = [
        *reference_turns(inst),
        [
            SolutionCall(tool="list_emails", args={"folder": "inbox"}),
            SolutionCall(tool="search_emails", args={"query": "reminder"}),
        ],
    ]

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent(turns, str(inst.task.solution.answer))

    options = EpisodeOptions(agent_label="test", fixtures_base=suite.root / "tasks")
    _, score = asyncio.run(run_episode(inst, factory, options))
    assert score.passed, [(c.name, c.detail) for c in score.checks if not c.passed]
