"""BFCL's own figures from a toolproof run: per-category accuracy and the overall score.

The grouping and weights restate ``bfcl_eval/eval_checker/eval_runner_helper.py``
(``generate_leaderboard_csv``) of bfcl-eval 2026.3.23, so the numbers read as the
leaderboard's: non-live = unweighted mean of simple (itself the unweighted mean of
Python, Java, JavaScript), multiple, parallel, parallel_multiple; live = mean
weighted by entry count of the four live AST categories; irrelevance = unweighted
mean of irrelevance and live_irrelevance; relevance = live_relevance (shown,
not weighted); multi-turn = unweighted mean of multi_turn_base, _miss_func,
_miss_param and _long_context; overall = 10/10/10/30/40 over non-live,
live, irrelevance, multi-turn and agentic, a group not run counting 0 as BFCL
counts it. Pure Python: this module never imports ``bfcl_eval``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OVERALL_WEIGHTS = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30, "agentic": 40}
MULTI_TURN = ("base", "miss_func", "miss_param", "long_context")
_TAG = "bfcl:"


def _acc(passed: int, count: int, tasks: int) -> dict[str, Any]:
    return {"accuracy": passed / count if count else 0.0, "total_count": tasks, "run": count > 0}


def _unweighted(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "accuracy": sum(p["accuracy"] for p in parts) / len(parts),
        "total_count": sum(p["total_count"] for p in parts),
        "run": all(p["run"] for p in parts),
    }


def _weighted(parts: list[dict[str, Any]]) -> dict[str, Any]:
    total = sum(p["total_count"] for p in parts)
    accuracy = sum(p["accuracy"] * p["total_count"] for p in parts) / total if total else 0.0
    return {"accuracy": accuracy, "total_count": total, "run": all(p["run"] for p in parts)}


def bfcl_summary(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The ``bfcl`` section of summary.json, or None when the run has no BFCL task.

    Args:
        tasks: summary.json's ``tasks`` (tags, and ``passed`` of ``scored`` episodes, or
            for older summaries per-epoch ``passed``; infra errors are left out of the
            counts, as everywhere in toolproof).
    """
    counts: dict[str, list[int]] = {}
    for entry in tasks.values():
        category = next((t[len(_TAG) :] for t in entry.get("tags", []) if t.startswith(_TAG)), None)
        if category is None:
            continue
        row = counts.setdefault(category, [0, 0, 0])
        row[2] += 1
        if "scored" in entry:  # summary.json 3: counts per task
            row[0] += int(entry.get("passed", 0))
            row[1] += int(entry["scored"])
            continue
        for epoch in entry.get("epochs", []):  # older summaries: one entry per episode
            if epoch.get("infra_error"):
                continue
            row[0] += bool(epoch.get("passed"))
            row[1] += 1
    if not counts:
        return None

    def cat(name: str) -> dict[str, Any]:
        passed, count, n_tasks = counts.get(name, [0, 0, 0])
        return _acc(passed, count, n_tasks)

    simple = _unweighted([cat("simple_python"), cat("simple_java"), cat("simple_javascript")])
    non_live = _unweighted([simple, cat("multiple"), cat("parallel"), cat("parallel_multiple")])
    live = _weighted(
        [cat(f"live_{n}") for n in ("simple", "multiple", "parallel", "parallel_multiple")]
    )
    irrelevance = _unweighted([cat("irrelevance"), cat("live_irrelevance")])
    multi_turn = _unweighted([cat(f"multi_turn_{n}") for n in MULTI_TURN])
    absent = {"accuracy": 0.0, "total_count": 0, "run": False}
    groups = {
        "non_live": non_live,
        "live": live,
        "irrelevance": irrelevance,
        "multi_turn": multi_turn,
        "agentic": absent,
    }
    weight = sum(OVERALL_WEIGHTS.values())
    overall = sum(groups[g]["accuracy"] * w for g, w in OVERALL_WEIGHTS.items()) / weight
    return {
        "categories": {name: cat(name) for name in sorted(counts)},
        "simple_ast_non_live": simple,
        "relevance": cat("live_relevance"),
        "groups": groups,
        "overall": overall,
        "overall_weights": dict(OVERALL_WEIGHTS),
        "complete": all(g["run"] for g in groups.values()),
        "note": "a group not run counts 0 in overall, as in BFCL's leaderboard",
    }
