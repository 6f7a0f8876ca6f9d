"""Significance from too few pairs: two paired tasks are no evidence.

``compare`` once said "p=0.001, better" from two paired episodes (a bootstrap of two
task differences that agree in sign). The paired bootstrap now needs
:data:`MIN_BOOTSTRAP_TASKS` tasks; below it the row has the change but no p-value. The
leaderboard's pairwise tests use the same rows.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.metrics._paired import METRICS, MIN_BOOTSTRAP_TASKS, metric_row


def _pairs(n: int) -> list[tuple[Any, Any]]:
    """``n`` tasks where B's partial credit beats A's by 0.5 on every one."""
    return [
        (
            SimpleNamespace(task_id=f"t{i}", passed=False, fraction=0.25),
            SimpleNamespace(task_id=f"t{i}", passed=False, fraction=0.75),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [1, 2, MIN_BOOTSTRAP_TASKS - 1])
def test_too_few_tasks_get_no_p_value(n: int) -> None:
    row = metric_row(METRICS["fraction"], _pairs(n), 0.05, 500, 0)
    assert row.n == n and row.change == pytest.approx(0.5)
    assert row.p_value is None and not row.significant and row.verdict == "n/a"


def test_enough_tasks_are_tested() -> None:
    row = metric_row(METRICS["fraction"], _pairs(MIN_BOOTSTRAP_TASKS + 4), 0.05, 500, 0)
    assert row.p_value is not None and row.significant and row.verdict == "better"
