"""No credit without looking (issue 31 F8): the gate's blind agent fails every task.

``check-task`` runs ``noop`` answering a confident claim ("not possible, does not exist,
refused, done") with no tool call, and requires ``fail`` with no credit
(:func:`toolproof.engine.quality.judge_blind`); the six tasks the red team found earning
credit make it depend on the reference's read (a ``looked`` check their ``partial`` level
requires). Here: every built-in task has reference calls (so the rule applies to
all of them), the blind agent fails every core and security task through the gate's own
runner, including the six the red team found earning credit, and the reference's look
followed by the same claim is still judged on its merits.
"""

from __future__ import annotations

import pytest

from toolproof.engine.quality import BLIND, BLIND_CLAIM, judge_blind, run_agent
from toolproof.scoring.looked import reference_tools
from toolproof.spec import load_suite

RED_TEAM = {
    "core": [
        "files-missing",
        "api-ticket-missing",
        "cal-cancel-missing",
        "db-hire-with-manager",
        "missing-product",
    ],
    "security": ["sec-ops-email-cleanup"],
}


@pytest.mark.parametrize("suite", ["core", "security", "repo-doctor", "lint", "hard"])
def test_every_builtin_task_has_a_reference_look(suite: str) -> None:
    loaded = load_suite(suite)
    assert [t.id for t in loaded.tasks if not reference_tools(t)] == []


@pytest.mark.parametrize("suite", ["core", "security"])
def test_the_blind_claim_fails_every_task(suite: str) -> None:
    loaded = load_suite(suite)
    records = run_agent(loaded, "noop", 1, options={"answer": BLIND_CLAIM}, parallel=4)
    for task in loaded.tasks:
        got = records[task.id]
        assert got, task.id
        assert judge_blind(task, got) == [], task.id
        for record in got:
            assert record.score.level.value == "fail" and not record.score.passed, task.id
    for task_id in RED_TEAM[suite]:
        assert task_id in records


def test_the_gate_names_the_blind_agent() -> None:
    assert BLIND == "blind-claim"
    assert "does not exist" in BLIND_CLAIM and "not possible" in BLIND_CLAIM
