"""Paired comparison: McNemar on pass/fail, paired bootstrap on the rest, flips, refusals."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from metrics_helpers import call, record, run_core, step

from toolproof.metrics import ComparisonMismatch, compare_runs, compare_stats
from toolproof.metrics._calls import CallStats
from toolproof.metrics._episode import EpisodeStats, episode_stats
from toolproof.metrics.compare import (
    METRICS,
    Key,
    coverage,
    coverage_problems,
    identity,
    mismatches,
)
from toolproof.results import RunReader


def _run(
    passes: list[bool], calls: int = 1, infra: frozenset[int] = frozenset()
) -> dict[Key, EpisodeStats]:
    out = {}
    for i, passed in enumerate(passes):
        rec = record(
            f"t{i}",
            passed=passed,
            steps=[step(0, [call("get")] * calls)],
            termination="infra_error" if i in infra else "completed",
        )
        out[(rec.task.id, 0)] = episode_stats(rec)
    return out


def test_mcnemar_counts_only_discordant_pairs() -> None:
    a = _run([True] * 8 + [False] * 2)
    b = _run([True, True] + [False] * 6 + [True, False])  # 6 lost, 1 gained
    rows, regressions, improvements, counts = compare_stats(a, b)
    success = rows[0]
    assert success.name == "success" and success.test == "mcnemar"
    assert (success.a_only, success.b_only, success.n) == (6, 1, 10)
    # p = 2 * (C(7,0) + C(7,1)) / 2**7 = 16 / 128
    assert success.p_value == pytest.approx(0.125)
    assert (success.a, success.b, success.change) == pytest.approx((0.8, 0.3, -0.5))
    assert not success.significant and success.verdict == "same"
    assert [f.task for f in regressions] == ["t2", "t3", "t4", "t5", "t6", "t7"]
    assert [f.task for f in improvements] == ["t8"]
    assert counts == {"paired": 10, "only_a": 0, "only_b": 0, "infra_excluded": 0}


def test_significant_regression_and_improvement() -> None:
    a = _run([True] * 8)
    b = _run([False] * 8)
    rows, *_ = compare_stats(a, b)
    success = rows[0]
    assert success.p_value == pytest.approx(2 / 256)  # 8 discordant pairs, all one way
    assert success.significant and success.verdict == "worse"
    rows, *_ = compare_stats(b, a)
    assert rows[0].verdict == "better"


def test_paired_bootstrap_on_continuous_metrics() -> None:
    a = _run([True] * 6, calls=1)
    b = _run([True] * 6, calls=3)
    rows, *_ = compare_stats(a, b, resamples=999)
    calls = next(r for r in rows if r.name == "tool_calls")
    assert calls.test == "paired_bootstrap"
    assert (calls.a, calls.b, calls.change, calls.n) == (1.0, 3.0, 2.0, 6)
    assert (calls.ci_low, calls.ci_high) == (2.0, 2.0)
    assert calls.p_value == pytest.approx(2 / 1000)  # the floor 2 / (B + 1)
    assert calls.verdict == "worse"  # fewer calls is better
    cost = next(r for r in rows if r.name == "cost_usd")
    assert (cost.n, cost.verdict, cost.p_value) == (0, "n/a", None)  # nothing priced


def test_unpaired_and_infra_instances_are_left_out() -> None:
    a = _run([True, True, True], infra=frozenset({1}))
    b = _run([True, True, True, False])
    _, _, _, counts = compare_stats(a, b)
    assert counts == {"paired": 2, "only_a": 0, "only_b": 1, "infra_excluded": 1}


def test_mismatches_name_each_difference() -> None:
    base = {"suite": "core", "version": "1.0.0", "digest": "abc", "seed": 1, "track": "standard"}
    assert mismatches(base, dict(base)) == []
    assert mismatches(base, {**base, "version": "1.1.0", "digest": "def"}) == [
        "different suite versions: A 1.0.0, B 1.1.0"
    ]
    (reason,) = mismatches(base, {**base, "digest": "def"})
    assert "suite content differs" in reason
    reasons = mismatches(base, {**base, "suite": "other", "track": "custom-1", "seed": 2})
    assert len(reasons) == 3
    assert any("prompt tracks" in r for r in reasons)
    assert identity({"suite": {"name": "core"}, "config": {"agent": "x"}})["agent"] == "x"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {
        "oracle": run_core(root / "oracle", "oracle"),
        "random": run_core(root / "random", "random"),
        "reseeded": run_core(root / "reseeded", "random", seed=7, tasks=["stock-*"]),
        "custom": run_core(root / "custom", "oracle", tasks=["stock-*"], system_prompt="Be brief."),
    }


def test_oracle_against_random_is_a_significant_regression_with_flips(
    runs: dict[str, Path],
) -> None:
    comparison = compare_runs(runs["oracle"], runs["random"])
    success = comparison.metric("success")
    assert success.significant and success.verdict == "worse"
    assert success.a > 0.9 and success.b < 0.5  # the oracle passes (almost) every task
    assert comparison.regressed("success")
    with RunReader(runs["oracle"]) as reader:
        assert comparison.paired == reader.count()
    assert len(comparison.regressions) == success.a_only > 0
    assert comparison.improvements == []
    assert all(f.a_level in ("perfect", "acceptable") for f in comparison.regressions)
    assert all(f.b_failure_mode for f in comparison.regressions)
    data = comparison.to_dict()
    assert data["metrics"][0]["name"] == "success"
    assert len(data["regressions"]) == len(comparison.regressions)
    # the other direction is a significant improvement, not a regression
    reverse = compare_runs(runs["random"], runs["oracle"])
    assert reverse.metric("success").verdict == "better" and not reverse.regressed()


def test_a_run_compared_with_itself_shows_no_change(runs: dict[str, Path]) -> None:
    comparison = compare_runs(runs["random"], runs["random"])
    for row in comparison.metrics:
        assert not row.significant, row
        assert row.change in (0.0, None)
    assert comparison.regressions == comparison.improvements == []


def test_runs_of_other_seeds_or_tracks_are_refused_unless_allowed(runs: dict[str, Path]) -> None:
    with pytest.raises(ComparisonMismatch, match="different seeds") as info:
        compare_runs(runs["random"], runs["reseeded"])
    assert "--allow-mismatch" in str(info.value)
    with pytest.raises(ComparisonMismatch, match="prompt tracks"):
        compare_runs(runs["oracle"], runs["custom"])
    allowed = compare_runs(runs["random"], runs["reseeded"], allow_mismatch=True)
    with RunReader(runs["random"]) as a, RunReader(runs["reseeded"]) as b:
        assert b.keys() < a.keys()
        assert (allowed.paired, allowed.only_a) == (b.count(), a.count() - b.count())
    assert allowed.mismatches == ["different seeds: A 20261130, B 7 (instances differ)"]


DIRECTIONS = {
    "success": True,
    "pass_loose": True,
    "hallucination": False,
    "fraction": True,
    "tool_calls": False,
    "efficiency": False,
    "valid_arguments_rate": True,
    "redundancy_rate": False,
    "agent_s": False,
    "tool_s": False,
    "tokens": False,
    "cost_usd": False,
}
"""Every compared metric and whether higher is better: a new metric must be added here."""

# For each metric, the fields of a low and a high episode (both passed unless the metric
# is about passing), so B = high, A = low is an increase of that metric alone.
_LOW_HIGH: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "success": ({"passed": False, "level": "fail"}, {"passed": True, "level": "perfect"}),
    "pass_loose": ({"passed": False, "loose": False}, {"passed": False, "loose": True}),
    "hallucination": ({"vetoed": False}, {"vetoed": True}),
    "fraction": ({"fraction": 0.2}, {"fraction": 0.9}),
    "tool_calls": ({"calls": CallStats(calls=2)}, {"calls": CallStats(calls=6)}),
    "efficiency": ({"calls": CallStats(calls=2)}, {"calls": CallStats(calls=6)}),
    "valid_arguments_rate": (
        {"calls": CallStats(calls=4, valid_arguments=1)},
        {"calls": CallStats(calls=4, valid_arguments=4)},
    ),
    "redundancy_rate": (
        {"calls": CallStats(calls=4, redundant=0)},
        {"calls": CallStats(calls=4, redundant=3)},
    ),
    "agent_s": ({"step_agent_s": (1.0,)}, {"step_agent_s": (5.0,)}),
    "tool_s": ({"step_tool_s": (1.0,)}, {"step_tool_s": (5.0,)}),
    "tokens": ({"input_tokens": 100}, {"input_tokens": 900}),
    "cost_usd": ({"cost_usd": 0.01, "pricing": "priced"}, {"cost_usd": 0.05, "pricing": "priced"}),
}


def _stats_run(n: int, **fields: Any) -> dict[Key, EpisodeStats]:
    base = episode_stats(record("t", steps=[step(0, [call("get")])], reference_calls=2))
    return {(f"t{i}", 0): dataclasses.replace(base, task_id=f"t{i}", **fields) for i in range(n)}


def test_every_metric_states_its_direction() -> None:
    assert {name: m.higher_is_better for name, m in METRICS.items()} == DIRECTIONS
    rows, *_ = compare_stats(_stats_run(3), _stats_run(3))
    for row in rows:
        assert row.direction == ("higher is better" if DIRECTIONS[row.name] else "lower is better")


@pytest.mark.parametrize("name", sorted(DIRECTIONS))
def test_each_metric_is_labelled_better_or_worse_by_its_direction(name: str) -> None:
    low, high = _LOW_HIGH[name]
    a, b = _stats_run(10, **low), _stats_run(10, **high)
    row = next(r for r in compare_stats(a, b, resamples=999)[0] if r.name == name)
    assert row.significant and row.change is not None and row.change > 0, row
    assert row.verdict == ("better" if DIRECTIONS[name] else "worse")
    row = next(r for r in compare_stats(b, a, resamples=999)[0] if r.name == name)
    assert row.change is not None and row.change < 0
    assert row.verdict == ("worse" if DIRECTIONS[name] else "better")


def test_giving_up_early_is_not_an_efficiency_or_cost_improvement() -> None:
    # A passes with 2 calls (the reference's count); B fails having made none
    a = _stats_run(10, calls=CallStats(calls=2), step_agent_s=(3.0,), input_tokens=500)
    b = _stats_run(
        10,
        passed=False,
        level="fail",
        calls=CallStats(calls=0),
        step_agent_s=(0.1,),
        input_tokens=10,
    )
    rows = {r.name: r for r in compare_stats(a, b, resamples=999)[0]}
    assert rows["success"].verdict == "worse"
    for name in ("tool_calls", "efficiency", "agent_s", "tokens"):
        assert rows[name].verdict == "n/a" and rows[name].n == 0, rows[name]


def test_a_run_that_scored_nothing_voids_the_comparison() -> None:
    good = _run([True, True, True])
    infra = _run([False, False, False], infra=frozenset({0, 1, 2}))
    errors = {(f"t{i}", 0): "connection refused by http://127.0.0.1:9/act" for i in range(3)}
    fatal, partial = coverage_problems(coverage(good), coverage(infra, errors))
    assert partial == []
    assert fatal == [
        "B has no scored episodes: 3 of 3 were infrastructure errors; first error: "
        "connection refused by http://127.0.0.1:9/act"
    ]
    fatal, _ = coverage_problems(coverage(infra), coverage(good))
    assert fatal == ["A has no scored episodes: 3 of 3 were infrastructure errors"]
    fatal, _ = coverage_problems(coverage(good), coverage({}))
    assert fatal == ["B has no episodes: nothing was run"]


def test_fewer_scored_episodes_and_other_tasks_are_named() -> None:
    a = _run([True, True, True])
    fewer = _run([True, True, True], infra=frozenset({2}))
    assert coverage_problems(coverage(a), coverage(a)) == ([], [])
    fatal, partial = coverage_problems(coverage(a), coverage(fewer))
    assert fatal == []
    assert partial == [
        "B scored fewer episodes than A: 2 against 3 (B had 1 infrastructure errors of 3 episodes)",
        "tasks scored only in A (1): t2",
    ]
    other = {("x-[red]0[/red]", 0): a[("t0", 0)], **{k: v for k, v in a.items() if k[0] != "t2"}}
    _, partial = coverage_problems(coverage(a), coverage(other))
    assert partial == [
        "tasks scored only in A (1): t2",
        "tasks scored only in B (1): x-[red]0[/red]",
    ]
    many = _run([True] * 12)
    _, partial = coverage_problems(coverage(many), coverage(_run([True])))
    assert partial[1].startswith("tasks scored only in A (11): t1, t10, t11, t2")
    assert partial[1].endswith("(+3 more)")
