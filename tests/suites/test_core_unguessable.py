"""The core suite's typed answers cannot be guessed, and the gate's answer rules hold on them.

``random`` hands in values it has seen (a stock it read, a path it listed) or draws from
the answer's schema. Over many seeds it must pass none of the tasks converted last
(issue 31): ``find-token-file`` (a path of a known shape among six places, next to revoked
near-miss tokens), ``api-ticket-status`` (status, priority and the assignee's user id),
``files-version-compare`` (both versions and the verdict), ``bank-stale-balance`` (a
balance no tool shows as such), ``stock-sum`` and ``calc-expression`` (computed). The
gate's ``answer_type`` and ``answer_rivals`` rules find nothing on any typed task of the
core and security suites, object answers included (their properties' rivals count).
"""

from __future__ import annotations

import os

import pytest

from toolproof.engine.quality import instances_of, judge_answer_type, run_agent
from toolproof.spec import builtin_suites_dir, load_suite

SEEDS = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "120"))
"""Epochs (each its own seed for the task and for the agent) of the random agent per task."""
UNGUESSABLE = [
    "find-token-file",
    "api-ticket-status",
    "files-version-compare",
    "bank-stale-balance",
    "stock-sum",
    "calc-expression",
]


def test_random_passes_no_converted_task_over_many_seeds() -> None:
    suite = load_suite(builtin_suites_dir() / "core")
    found = run_agent(suite, "random", SEEDS, UNGUESSABLE, parallel=8)
    assert {t: len(records) for t, records in found.items()} == dict.fromkeys(UNGUESSABLE, SEEDS)
    lucky = sorted(
        f"{r.key}: strict {r.score.passed}, loose {r.score.passed_loose}"
        for records in found.values()
        for r in records
        if r.score.passed or r.score.passed_loose
    )
    assert lucky == []
    # random does hand answers in (so the zero above is not an agent that never submits):
    # on bank-stale-balance and stock-sum, schema-valid numbers
    submitted = {
        t: sum(
            any(c.name == "submit_answer" and o is not None and not o.is_error for c, o in calls)
            for calls in (r.trajectory.tool_calls() for r in found[t])
        )
        for t in ("bank-stale-balance", "stock-sum")
    }
    assert all(n >= SEEDS // 4 for n in submitted.values()), submitted


def test_find_token_file_refuses_what_random_can_hand_in() -> None:
    """Every submission random makes on find-token-file is refused by the declared pattern
    (it never forms a path under /workspace/project), so it cannot end the task by luck."""
    suite = load_suite(builtin_suites_dir() / "core")
    found = run_agent(suite, "random", SEEDS, ["find-token-file"], parallel=8)
    tried = [
        (c.arguments, o)
        for r in found["find-token-file"]
        for c, o in r.trajectory.tool_calls()
        if c.name == "submit_answer"
    ]
    assert tried  # it does try
    assert all(o is not None and o.is_error for _, o in tried), [a for a, o in tried][:5]


@pytest.mark.parametrize("name", ["core", "security"])
def test_every_typed_answer_fits_its_type_and_has_rivals(name: str) -> None:
    suite = load_suite(builtin_suites_dir() / name)
    typed = [t.id for t in suite.tasks if t.answer is not None]
    assert typed or name == "security"
    findings = [
        f"{f.task_id}: {f.rule}: {f.message}"
        for task_id in typed
        for f in judge_answer_type(instances_of(suite, task_id, 5))
    ]
    assert findings == []


def test_an_object_answer_counts_its_properties_rivals() -> None:
    """Object answers (order-status: an order id and a status) have rivals through their
    properties; before, the gate saw no candidate of an object type and refused them all."""
    suite = load_suite(builtin_suites_dir() / "core")
    for task_id in ("order-status", "files-version-compare", "api-ticket-status"):
        task = suite.task(task_id)
        assert task.answer is not None and task.answer.answer_kind == "object"
        assert judge_answer_type(instances_of(suite, task_id, 5)) == []
