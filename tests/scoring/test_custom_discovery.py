"""Custom check modules found in the suite directory; broken ones are task errors; validate
refuses broken checks and level rules that would credit doing nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.scoring import check_custom_imports, check_levels
from toolproof.spec import Task, load_suite
from toolproof_helpers import make_task, write_suite

CHECKS = """
def stock_is(ctx, value):
    return ctx.final.records["products"]["A"]["stock"] == value, "{tag}"
"""


def _suite(root: Path, tag: str, *, where: str = "checks/checks.py", body: str = CHECKS) -> Path:
    task = make_task(
        success=[
            {"kind": "output", "number": 7},
            {"kind": "custom", "name": "mine", "function": "checks:stock_is", "args": {"value": 7}},
        ]
    )
    write_suite(root, [task], name=root.name)
    module = root / where
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(body.replace("{tag}", tag), encoding="utf-8")
    return root


def _run(root: Path, agent: str = "oracle") -> EpisodeRecord:
    suite = load_suite(root)
    worker = Worker(RunConfig(suite=str(root), agent=agent, snapshots=False), None, suite)
    return asyncio.run(worker.run(EpisodeJob(suite.tasks[0].id, 0)))


def _mine(record: EpisodeRecord) -> Any:
    return next(c for c in record.score.checks if c.name == "mine")


def test_two_suites_each_use_their_own_checks_module(tmp_path: Path) -> None:
    first = _run(_suite(tmp_path / "one", "first suite"))
    second = _run(_suite(tmp_path / "two", "second suite"))
    assert (_mine(first).detail, _mine(second).detail) == ("first suite", "second suite")
    assert first.score.passed and second.score.passed


def test_a_module_at_the_suite_root_is_found_too(tmp_path: Path) -> None:
    record = _run(_suite(tmp_path / "root", "at the root", where="checks.py"))
    assert _mine(record).detail == "at the root" and record.score.passed


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("def stock_is(:\n", "SyntaxError"),
        ("import toolproof_no_such_dependency\n", "ModuleNotFoundError"),
        ("def other(ctx):\n    return True\n", "has no attribute 'stock_is'"),
        ("def stock_is(ctx, value):\n    raise KeyError('stock')\n", "raised KeyError"),
        ("def stock_is(ctx, value):\n    return {'a': 1}\n", "returned dict, not a score"),
    ],
    ids=["syntax", "import", "missing", "raises", "wrong-type"],
)
def test_a_broken_check_is_a_task_error_not_the_agents_failure(
    tmp_path: Path, body: str, said: str
) -> None:
    record = _run(_suite(tmp_path / "broken", "x", body=body))
    mine = _mine(record)
    assert mine.task_error and said in mine.detail, mine.detail
    assert (record.score.task_error, record.score.passed, record.score.failure_mode) == (
        True,
        False,
        None,
    )


def test_validate_imports_every_custom_check(tmp_path: Path, invoke: Callable[..., Any]) -> None:
    good = _suite(tmp_path / "good", "fine")
    assert check_custom_imports(load_suite(good)) == []
    assert invoke("validate", good).code == 0
    bad = _suite(tmp_path / "bad", "x", body="def stock_is(:\n")
    problems = check_custom_imports(load_suite(bad))
    assert len(problems) == 1
    assert "tasks/stock.yaml: success[1].function: cannot import 'checks'" in problems[0]
    result = invoke("validate", bad)
    assert result.code == 2 and "success[1].function" in result.err


def _task(**fields: Any) -> Task:
    return Task.model_validate(make_task(**fields))


GUARD = {"kind": "state", "name": "kept", "unchanged_elsewhere": True}
NO_CALL = {"kind": "process", "name": "no_adjust", "must_not_call": ["adjust_stock"]}
ANSWER = {"kind": "output", "name": "answer", "number": 7}


@pytest.mark.parametrize(
    ("success", "levels", "said"),
    [
        ([GUARD, NO_CALL], None, "every check is a guard"),
        ([ANSWER, GUARD], {"acceptable": {"checks": ["kept"]}}, "levels.acceptable: checks"),
        ([ANSWER, GUARD], {"perfect": {"checks": []}}, "levels.perfect: checks"),
        ([ANSWER, GUARD], {"partial": {"min_fraction": 0}}, "levels.partial.min_fraction"),
        ([ANSWER, GUARD], {"partial": {"checks": ["nope"]}}, "no check is named 'nope'"),
    ],
)
def test_levels_that_would_credit_doing_nothing_are_refused(
    success: list[dict[str, Any]], levels: dict[str, Any] | None, said: str
) -> None:
    problems = check_levels(_task(success=success, levels=levels))
    assert any(said in p for p in problems), problems


@pytest.mark.parametrize(
    "levels",
    [
        None,
        {"acceptable": {"checks": ["answer"]}},
        {"partial": {"checks": ["kept"]}},  # guards must hold and half the progress is earned
        {"acceptable": {"checks": ["kept"], "min_fraction": 1}},
    ],
)
def test_levels_that_need_progress_are_accepted(levels: dict[str, Any] | None) -> None:
    assert check_levels(_task(success=[ANSWER, GUARD], levels=levels)) == []


def test_validate_refuses_a_task_of_guards_only(tmp_path: Path, invoke: Callable[..., Any]) -> None:
    root = write_suite(tmp_path / "guards", [make_task(success=[GUARD, NO_CALL])])
    result = invoke("validate", root)
    assert result.code == 2 and "every check is a guard" in result.err, result.err
