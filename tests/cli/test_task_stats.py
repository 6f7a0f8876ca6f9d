"""Difficulty statistics: reference calls (as rendered), tools offered (toolkits expanded),
labelled traps; printed by ``toolproof list --suite`` per tier and category."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from toolproof.cli._task_stats import group_lines, suite_stats, task_stats, trap_counts
from toolproof.spec import load_suite
from toolproof_helpers import CliResult, make_task, write_suite

Invoke = Callable[..., CliResult]


def _suite(tmp_path: Path) -> Path:
    long = make_task(
        id="long",
        difficulty=3,
        tools=["inventory.*", "calculate"],
        tags=["trap:stale-data", "trap:paged-output", "not-a-trap"],
        params={"big": {"choice": [True]}},
        solution={
            "calls": [
                {"tool": "get_stock", "args": {"product_id": "A"}},
                [
                    {"tool": "get_stock", "args": {"product_id": "A"}},
                    {"tool": "list_products", "args": {}},
                ],
                {
                    "tool": "adjust_stock",
                    "args": {"product_id": "A", "delta": 1},
                    "when": "not big",
                },
            ],
            "answer": "7",
        },
    )
    return write_suite(tmp_path / "suite", [make_task(), long])


def test_counts_follow_the_rendered_solution_and_the_expanded_toolkits(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path))
    stats = {s.task_id: s for s in suite_stats(suite)}
    long = stats["long"]
    assert long.reference_calls == 3 and long.reference_turns == 2  # the `when` call is left out
    assert long.tools_offered == 7 and long.tools_used == 2  # six inventory tools + calculate
    assert long.traps == ("stale-data", "paged-output")
    assert task_stats(suite.task("long")).tools_offered == 7
    assert stats["stock"].traps == () and stats["stock"].reference_calls == 1
    assert trap_counts(stats.values()) == {"paged-output": 1, "stale-data": 1}
    lines = group_lines(stats.values(), "difficulty")
    assert lines == [
        "1: 1 tasks, calls 1, tools 2, traps/task 0.0",
        "3: 1 tasks, calls 3, tools 7, traps/task 2.0",
    ]


def test_list_suite_prints_the_statistics(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("list", "--suite", _suite(tmp_path))
    assert result.code == 0, result.err
    assert "per difficulty:" in result.out and "per category:" in result.out
    assert "3: 1 tasks, calls 3, tools 7, traps/task 2.0" in result.out
    assert "traps: paged-output 1, stale-data 1" in result.out
    assert "calls" in result.out and "offered" in result.out
