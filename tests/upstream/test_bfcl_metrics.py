"""BFCL's leaderboard arithmetic over a run's tasks (pure: no bfcl_eval needed)."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.upstream.bfcl_metrics import OVERALL_WEIGHTS, bfcl_summary


def _tasks(spec: dict[str, tuple[int, int]]) -> dict[str, dict[str, Any]]:
    """``{category: (passed, total)}`` as summary.json task entries, one epoch each."""
    tasks: dict[str, dict[str, Any]] = {}
    for category, (passed, total) in spec.items():
        for i in range(total):
            tasks[f"{category}_{i}"] = {
                "tags": ["bfcl", f"bfcl:{category}"],
                "epochs": [{"epoch": 0, "passed": i < passed, "infra_error": False}],
            }
    return tasks


def test_groups_and_overall_follow_bfcl_weighting() -> None:
    tasks = _tasks(
        {
            "simple_python": (4, 4),  # simple = mean(1, 0.5, 0) = 0.5
            "simple_java": (1, 2),
            "simple_javascript": (0, 2),
            "multiple": (1, 1),
            "parallel": (0, 1),
            "parallel_multiple": (1, 2),  # non-live = mean(0.5, 1, 0, 0.5) = 0.5
            "live_simple": (3, 3),
            "live_multiple": (0, 1),  # live = (3 + 0) / 4 entries = 0.75 (weighted)
            "irrelevance": (1, 1),
            "live_irrelevance": (0, 2),  # irrelevance = mean(1, 0) = 0.5
            "live_relevance": (1, 4),  # shown, not weighted
        }
    )
    section = bfcl_summary(tasks)
    assert section is not None
    assert section["simple_ast_non_live"]["accuracy"] == pytest.approx(0.5)
    groups = section["groups"]
    assert groups["non_live"]["accuracy"] == pytest.approx(0.5)
    assert groups["live"]["accuracy"] == pytest.approx(0.75)
    assert groups["irrelevance"]["accuracy"] == pytest.approx(0.5)
    assert groups["multi_turn"]["accuracy"] == 0.0 and not section["complete"]
    assert section["relevance"]["accuracy"] == pytest.approx(0.25)
    assert section["overall"] == pytest.approx((0.5 * 10 + 0.75 * 10 + 0.5 * 10) / 100)
    assert sum(OVERALL_WEIGHTS.values()) == 100


def test_infra_errors_are_left_out_and_other_tasks_ignored() -> None:
    tasks = _tasks({"simple_python": (1, 2)})
    tasks["simple_python_1"]["epochs"][0]["infra_error"] = True
    tasks["core_task"] = {"tags": ["files"], "epochs": [{"passed": False}]}
    section = bfcl_summary(tasks)
    assert section is not None
    assert section["categories"] == {
        "simple_python": {"accuracy": 1.0, "total_count": 2, "run": True}
    }
    assert bfcl_summary({"core_task": tasks["core_task"]}) is None


def test_multi_turn_is_the_unweighted_mean_of_its_four_categories_at_weight_30() -> None:
    tasks = _tasks(
        {
            "multi_turn_base": (3, 4),  # 0.75
            "multi_turn_miss_func": (1, 1),  # 1.0
            "multi_turn_miss_param": (0, 3),  # 0.0
            "multi_turn_long_context": (1, 4),  # 0.25 -> mean 0.5, not weighted by count
        }
    )
    section = bfcl_summary(tasks)
    assert section is not None
    group = section["groups"]["multi_turn"]
    assert group == {"accuracy": pytest.approx(0.5), "total_count": 12, "run": True}
    assert section["categories"]["multi_turn_base"]["accuracy"] == pytest.approx(0.75)
    assert section["overall"] == pytest.approx(0.5 * 30 / 100)
    partial = bfcl_summary(_tasks({"multi_turn_base": (1, 1)}))
    assert partial is not None and partial["groups"]["multi_turn"]["run"] is False
    assert partial["groups"]["multi_turn"]["accuracy"] == pytest.approx(0.25)  # others count 0


def test_summary_3_counts_per_task_give_the_same_section() -> None:
    old = _tasks({"simple_python": (1, 2), "multiple": (2, 2)})
    new = {
        key: {
            "tags": entry["tags"],
            "scored": sum(1 for e in entry["epochs"] if not e.get("infra_error")),
            "passed": sum(1 for e in entry["epochs"] if e["passed"] and not e.get("infra_error")),
        }
        for key, entry in old.items()
    }
    assert bfcl_summary(new) == bfcl_summary(old)
