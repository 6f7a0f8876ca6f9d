"""summary.json metrics against values worked out by hand on small made-up runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from metrics_helpers import call, check, record, step

from toolproof.metrics import summarize
from toolproof.metrics.summary import episode_numbers
from toolproof.results import EpisodeRecord
from toolproof.trajectory import Usage

META: dict[str, Any] = {"suite": {"name": "s", "version": "1"}, "config": {"agent": "test"}}


def _three_tasks() -> list[EpisodeRecord]:
    """a: pass pass fail; b: fail fail fail (+ one infra error); c: pass pass pass."""
    levels = {
        "a": ["perfect", "acceptable", "fail"],
        "b": ["partial", "fail", "fail"],
        "c": ["perfect", "perfect", "acceptable"],
    }
    out = [
        record(task, epoch, passed=level in ("perfect", "acceptable"), level=level)
        for task, row in levels.items()
        for epoch, level in enumerate(row)
    ]
    out.append(record("b", 3, passed=False, termination="infra_error", attempts=3, duration_s=99.0))
    return out


def test_success_with_wilson_and_task_clustered_bootstrap() -> None:
    summary = summarize(_three_tasks(), META)
    s = summary["success"]
    # 5 of 9 scored episodes; the infra error is in no denominator.
    assert (s["successes"], s["n"]) == (5, 9)
    assert s["rate"] == pytest.approx(5 / 9)
    # Wilson, p = 5/9, n = 9: centre 0.538936, half-width 0.272285.
    assert s["ci_low"] == pytest.approx(0.266651, abs=1e-5)
    assert s["ci_high"] == pytest.approx(0.811221, abs=1e-5)
    # Bootstrap over the 3 per-task means (2/3, 0, 1), not over 9 episodes.
    assert s["tasks"] == 3
    assert (s["bootstrap_ci_low"], s["bootstrap_ci_high"]) == (0.0, 1.0)
    assert summary["episodes"] == {
        "planned": 10,
        "finished": 10,
        "scored": 9,
        "infra_errors": 1,
        "task_errors": 0,
        "infra_retries": 2,
        "complete": True,
    }
    assert summary["terminations"]["completed"] == 9
    assert summary["terminations"]["infra_error"] == 1


def test_pass_at_k_and_pass_hat_k_average_unbiased_estimates_over_tasks() -> None:
    summary = summarize(_three_tasks(), META)
    # a: n=3 c=2 -> pass@1 2/3, pass@2 1, pass@3 1; pass^1 2/3, pass^2 1/3, pass^3 0
    # b: n=3 c=0 -> all 0 (the infra epoch does not count); c: n=3 c=3 -> all 1
    assert summary["pass_at_k"] == pytest.approx({"1": 5 / 9, "2": 2 / 3, "3": 2 / 3}, abs=1e-6)
    assert summary["pass_hat_k"] == pytest.approx({"1": 5 / 9, "2": 4 / 9, "3": 1 / 3}, abs=1e-6)
    assert summary["pass_k_tasks"] == {"1": 3, "2": 3, "3": 3}


def test_levels_strict_and_loose() -> None:
    """pass@strict is success; pass@loose adds the episodes whose free-text answer the
    loose rule accepts (Score.passed_loose), never a partial level by itself."""
    records = _three_tasks()
    summary = summarize(records, META)
    assert summary["levels"] == {"perfect": 3, "acceptable": 2, "partial": 1, "fail": 3}
    assert summary["pass_strict"]["successes"] == 5
    assert summary["pass_loose"]["successes"] == 5  # the partial episode is not a pass
    records[4] = record("b", 1, passed=False, level="fail", passed_loose=True)
    loose = summarize(records, META)
    assert loose["pass_strict"]["successes"] == 5
    assert loose["pass_loose"]["successes"] == 6
    assert loose["pass_loose"]["rate"] == pytest.approx(6 / 9)


def test_step_efficiency_over_all_and_passed_episodes() -> None:
    records = [
        record("a", steps=[step(0, [call("get"), call("get")])], reference_calls=2),
        record("b", steps=[step(0, [call("get")] * 3)], reference_calls=1),
        record("c", passed=False, steps=[step(0, [call("get")])], reference_calls=2),
        record("d", steps=[step(0, [call("get")])], reference_calls=0),  # no reference: left out
    ]
    eff = summarize(records, META)["efficiency"]
    # ratios 1.0, 3.0, 0.5; p95 of [0.5, 1, 3]: h = 1.9 -> 1 + 0.9 * 2 = 2.8
    assert eff["all"] == pytest.approx({"n": 3, "mean": 1.5, "median": 1.0, "p95": 2.8})
    # passed only: [1, 3]; p95: h = 0.95 -> 1 + 0.95 * 2 = 2.9
    assert eff["passed"] == pytest.approx({"n": 2, "mean": 2.0, "median": 2.0, "p95": 2.9})
    assert episode_numbers(records[1])["efficiency"] == 3.0
    assert episode_numbers(records[3])["efficiency"] is None


def test_tool_call_accuracy() -> None:
    calls = [
        call("get"),
        call("put"),
        call("get", result="bad", error_kind="invalid_arguments"),
        call("nope", result="no tool", error_kind="unknown_tool"),
    ]
    records = [
        record("a", steps=[step(0, calls)], reference_tools=["get"]),
        record("b", steps=[step(0, [call("list")])], reference_tools=[]),  # no reference tools
    ]
    use = summarize(records, META)["tool_use"]
    assert use["calls"] == 5
    assert use["calls_per_episode"] == 2.5
    assert use["reference_tool_rate"] == 0.5  # 2 of the 4 calls of episodes with reference tools
    assert use["offered_tool_rate"] == 0.8  # all but the unknown tool
    assert use["valid_arguments_rate"] == 0.6  # not invalid_arguments, not unknown_tool
    assert use["error_rate"] == 0.4
    assert use["errors"] == {"invalid_arguments": 1, "unknown_tool": 1}


def test_redundancy_repeats_on_the_same_state_and_unused_results() -> None:
    a15 = {"id": "A", "stock": 15}
    a20 = {"id": "A", "stock": 20}
    steps = [
        step(0, [call("get", {"id": "A"}, result=a15)]),  # used: 15 is in the answer
        step(1, [call("get", {"id": "A"}, result=a15)]),  # repeated (same call, same state)
        step(2, [call("list", result=["A", "B"])]),  # unused: neither B nor 2 appears later
        step(3, [call("get", {"id": "A"}, result="busy", error_kind="tool_error")]),  # repeated
        step(4, [call("put", {"id": "A", "stock": 20})], digest="s1", changed=["x.A"]),  # a write
        step(5, [call("get", {"id": "A"}, result=a20)], digest="s1"),  # new state: not repeated
        step(6, [call("get", {"id": "A"}, result=a20)], digest="s1"),  # repeated
        step(7, [call("list", result=["A", "B"]), call("list", result=["A", "B"])], digest="s1"),
    ]
    records = [record("a", steps=steps, answer="A had 15 and now has 20.", prompt="Check A.")]
    red = summarize(records, META)["redundancy"]
    # 9 calls; repeated: steps 1, 3, 6 and the second call of 7; unused: 2 and the first of 7
    # (a repeat is counted as repeated only)
    assert red["calls"] == 9
    assert red["repeated"] == 4
    assert red["unused"] == 2
    assert red["redundant"] == 6
    assert red["rate"] == pytest.approx(6 / 9, abs=1e-6)
    assert red["repeat_rate"] == pytest.approx(4 / 9, abs=1e-6)
    assert red["unused_rate"] == pytest.approx(2 / 9, abs=1e-6)


def test_latency_agent_and_tool_time_apart_per_step_and_episode() -> None:
    records = [
        record(
            "a",
            steps=[step(0, agent_s=1, tool_s=0.5), step(1, agent_s=2, tool_s=0.5)],
            duration_s=4,
        ),
        record("b", steps=[step(0, agent_s=3, tool_s=1)], duration_s=5),
        record(
            "c", passed=False, termination="infra_error", steps=[step(0, agent_s=50, tool_s=50)]
        ),
    ]
    lat = summarize(records, META)["latency"]
    assert lat["agent_s"]["step"] == pytest.approx({"n": 3, "mean": 2, "median": 2, "p95": 2.9})
    assert lat["agent_s"]["episode"] == pytest.approx({"n": 2, "mean": 3, "median": 3, "p95": 3})
    assert lat["tool_s"]["step"] == pytest.approx(
        {"n": 3, "mean": 2 / 3, "median": 0.5, "p95": 0.95}, abs=1e-6
    )
    assert lat["tool_s"]["episode"] == pytest.approx({"n": 2, "mean": 1, "median": 1, "p95": 1})
    assert lat["episode_s"] == pytest.approx({"n": 2, "mean": 4.5, "median": 4.5, "p95": 4.95})


def _usage(tokens_in: int, tokens_out: int, cost: float | None) -> Usage:
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost)


def test_tokens_and_cost_with_unpriced_models_never_zero_dollars() -> None:
    records = [
        record(
            "a", steps=[step(0, usage=_usage(100, 10, 0.01)), step(1, usage=_usage(50, 5, 0.02))]
        ),
        record("b", steps=[step(0, usage=_usage(200, 20, None))]),  # an unpriced model
        record("c", steps=[step(0)]),  # no model at all
    ]
    summary = summarize(records, META)
    tokens = summary["tokens"]
    assert (tokens["input"], tokens["output"], tokens["total"]) == (350, 35, 385)
    assert tokens["per_episode"] == pytest.approx(
        {"n": 3, "mean": 385 / 3, "median": 165, "p95": 214.5}, abs=1e-6
    )
    cost = summary["cost"]
    assert cost["status"] == "partial"
    assert cost["usd"] == pytest.approx(0.03)
    assert (cost["priced_episodes"], cost["unpriced_episodes"], cost["no_usage_episodes"]) == (
        1,
        1,
        1,
    )
    assert cost["per_episode_usd"]["mean"] == pytest.approx(0.03)
    unpriced = episode_numbers(next(r for r in records if r.task.id == "b"))
    assert unpriced["cost_usd"] is None and unpriced["pricing"] == "unpriced"

    only_unpriced = summarize([records[1]], META)["cost"]
    assert only_unpriced["status"] == "unpriced"
    assert only_unpriced["usd"] is None
    assert summarize([records[2]], META)["cost"] == {
        "status": "no_usage",
        "usd": None,
        "per_episode_usd": None,
        "priced_episodes": 0,
        "unpriced_episodes": 0,
        "no_usage_episodes": 1,
    }


def _judge(tokens_in: int, tokens_out: int, cost: float | None, samples: int = 3) -> Any:
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}
    data = {"usage": usage, "samples": [{"score": 4}] * samples}
    return check("judge", data=data)


def test_judge_cost_is_reported_apart_from_agent_cost() -> None:
    records = [
        record(
            "a",
            steps=[step(0, usage=_usage(100, 10, 0.01))],
            checks=[_judge(300, 30, None)],
            judged=True,
        ),
        record("b", checks=[_judge(100, 10, 0.5, samples=1)], judged=True),
        record("c"),
    ]
    summary = summarize(records, META)
    assert summary["tokens"]["total"] == 110  # the agent's only
    assert summary["cost"]["usd"] == pytest.approx(0.01)
    judge = summary["judge"]
    assert (judge["checks"], judge["samples"]) == (2, 4)
    assert judge["tokens"] == {"input": 400, "output": 40}
    assert judge["cost"] == {"status": "partial", "usd": 0.5, "unpriced_checks": 1}
    scoring = summary["breakdown"]["scoring"]
    assert scoring["judged"]["success"]["n"] == 2
    assert scoring["objective"]["success"]["n"] == 1


def test_answer_accuracy_evidence_hits_and_hallucinations() -> None:
    records = [
        record(
            "a",
            checks=[check("evidence", False, data={"hits": ["x"], "missing": ["y"]})],
            passed=False,
        ),
        record("b", checks=[check("evidence", data={"hits": ["x", "y"], "missing": []})]),
        record(
            "c",
            checks=[check("evidence", False, veto=True, data={"forbidden": ["Zed"]})],
            passed=False,
        ),
    ]
    answers = summarize(records, META)["answers"]
    assert answers["evidence"] == {"episodes": 2, "required": 4, "hits": 3, "hit_rate": 0.75}
    halluc = answers["hallucination"]
    assert (halluc["successes"], halluc["n"]) == (1, 3)
    assert halluc["rate"] == pytest.approx(1 / 3)


def test_breakdown_by_category_type_difficulty_domain_tag() -> None:
    records = [
        record("a", category="normal", difficulty=1, domain="shop", tags=["x", "y"]),
        record("b", passed=False, category="edge", difficulty=2, domain="files", tags=["x"]),
        record("c", category="edge", type_="multi_step", difficulty=2, domain="files"),
    ]
    breakdown = summarize(records, META)["breakdown"]
    assert set(breakdown) == {"category", "type", "difficulty", "domain", "tag", "scoring"}
    assert breakdown["category"]["edge"]["success"]["successes"] == 1
    assert breakdown["category"]["edge"]["success"]["n"] == 2
    assert breakdown["difficulty"]["2"]["success"]["n"] == 2
    assert breakdown["domain"]["shop"]["success"]["rate"] == 1.0
    assert breakdown["type"]["multi_step"]["success"]["n"] == 1
    assert breakdown["tag"]["x"]["success"]["n"] == 2
    assert breakdown["tag"]["y"]["success"]["n"] == 1
    assert set(breakdown["scoring"]) == {"objective"}
    # each group carries the whole metric block
    assert set(breakdown["tag"]["x"]) == set(summarize(records, META)) - {
        "toolproof_summary",
        "suite",
        "agent",
        "model",
        "track",
        "config",
        "environment",
        "breakdown",
        "tasks",
    } | {"episodes"}


def test_failure_modes_and_task_entries() -> None:
    records = [
        record("a", passed=False, failure_mode="wrong_tool", failure_step=0),
        record("a", 1, passed=False, failure_mode="wrong_tool", failure_step=2),
        record("b", passed=False, failure_mode="loop", failure_step=4),
        record("c"),
    ]
    summary = summarize(records, META)
    assert summary["failure_modes"]["wrong_tool"] == 2
    assert summary["failure_modes"]["loop"] == 1
    assert summary["failure_modes"]["timeout"] == 0
    entry = summary["tasks"]["a"]
    assert "epochs" not in entry  # per-episode numbers are in run.db, not summary.json
    assert (entry["episodes"], entry["scored"], entry["passed"], entry["infra_errors"]) == (
        2,
        2,
        0,
        0,
    )
    assert entry["failure_modes"] == {"wrong_tool": 2}
    assert entry["levels"]["fail"] == 2 and entry["success_rate"] == 0.0
    assert summary["tasks"]["c"]["success_rate"] == 1.0
    numbers = episode_numbers(records[1])
    assert (numbers["epoch"], numbers["failure_mode"], numbers["failure_step"]) == (
        1,
        "wrong_tool",
        2,
    )


def test_summarize_streams_a_generator_once_and_handles_an_empty_run() -> None:
    consumed = []

    def records() -> Iterator[EpisodeRecord]:
        for r in _three_tasks():
            consumed.append(r.key)
            yield r

    summary = summarize(records(), META)
    assert len(consumed) == 10
    assert summary["success"]["n"] == 9
    empty = summarize([], META)
    assert empty["success"]["empty"] is True
    assert empty["success"]["bootstrap_ci_low"] is None
    assert empty["pass_at_k"] == {}
    assert empty["efficiency"]["all"]["median"] is None
    assert empty["episodes"]["complete"] is True


def test_the_summary_does_not_depend_on_when_pending_values_are_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolproof.metrics._aggregate as aggregate
    import toolproof.metrics.summary as summary_module

    records = [
        record(
            f"t{i % 7}",
            epoch=i // 7,
            passed=i % 3 != 0,
            steps=[
                step(
                    0,
                    [call("get_stock", {"product_id": "A"})],
                    agent_s=0.01 * i,
                    tool_s=0.002 * i,
                    usage=Usage(input_tokens=10 + i, output_tokens=i, cost_usd=0.001 * i),
                )
            ],
            category=("normal", "edge")[i % 2],
            tags=["x"] if i % 5 else [],
            duration_s=0.1 * i,
        )
        for i in range(700)
    ]
    summaries = []
    for pending in (1, 5, 256, 10_000):
        monkeypatch.setattr(aggregate, "PENDING", pending)
        monkeypatch.setattr(summary_module, "PENDING", pending)
        summaries.append(summarize(records, {}))
    assert all(s == summaries[0] for s in summaries[1:])
    assert summaries[0]["latency"]["agent_s"]["step"]["n"] == 700
