"""The breakdown counts each episode once and merges groups at the end: the same blocks as
counting every episode in every one of its groups."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from metrics_helpers import record

from toolproof.metrics._aggregate import Aggregate
from toolproof.metrics._breakdown import DIMENSIONS, Breakdown, group_keys
from toolproof.metrics._episode import EpisodeStats, episode_stats

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "40"))
_BASE = episode_stats(record())
_EIGHTHS = [n / 8 for n in range(0, 40)]  # exact in binary: every sum is exact


def _direct(episodes: list[EpisodeStats]) -> dict[str, dict[str, Any]]:
    """Each episode counted in each of its groups as it comes (what the breakdown was)."""
    groups: dict[str, dict[str, Aggregate]] = {d: {} for d in DIMENSIONS}
    for stats in episodes:
        for dimension, key in group_keys(stats):
            groups[dimension].setdefault(key, Aggregate(capped=True)).add(stats)
    return {d: {k: g[k].to_dict() for k in sorted(g)} for d, g in groups.items()}


def _merged(episodes: list[EpisodeStats]) -> dict[str, dict[str, Any]]:
    breakdown = Breakdown()
    for stats in episodes:
        breakdown.add(stats)
    return breakdown.to_dict()


_episode = st.builds(
    lambda task, facts, outcome, times, spend: dataclasses.replace(
        _BASE, task_id=f"t{task}", **facts, **outcome, **times, **spend
    ),
    st.integers(0, 5),
    st.fixed_dictionaries(
        {
            "category": st.sampled_from(["normal", "edge"]),
            "type": st.sampled_from(["single_tool", "multi_step"]),
            "difficulty": st.integers(1, 3),
            "domain": st.sampled_from(["shop", "files"]),
            "tags": st.lists(st.sampled_from(["x", "y", "z"]), max_size=3).map(tuple),
            "judged": st.booleans(),
        }
    ),
    st.fixed_dictionaries(
        {
            "passed": st.booleans(),
            "loose": st.booleans(),
            "infra_error": st.booleans(),
            "task_error": st.booleans(),
            "attempts": st.integers(1, 3),
            "level": st.sampled_from(["perfect", "fail", "partial"]),
            "termination": st.sampled_from(["completed", "timeout", "step_limit"]),
            "failure_mode": st.sampled_from([None, "wrong_tool", "loop"]),
            "reference_calls": st.integers(0, 3),
            "vetoed": st.booleans(),
            "evidence_required": st.integers(0, 2),
            "evidence_hits": st.integers(0, 2),
        }
    ),
    st.fixed_dictionaries(
        {
            "step_agent_s": st.lists(st.sampled_from(_EIGHTHS), max_size=4).map(tuple),
            "step_tool_s": st.lists(st.sampled_from(_EIGHTHS), max_size=4).map(tuple),
            "duration_s": st.sampled_from(_EIGHTHS),
        }
    ),
    st.fixed_dictionaries(
        {
            "input_tokens": st.integers(0, 1000),
            "output_tokens": st.integers(0, 1000),
            "tokens_estimated": st.booleans(),
            "pricing": st.sampled_from(["priced", "unpriced", "no_usage"]),
            "cost_usd": st.sampled_from([None, 0.0, 0.125, 2.5]),
            "judge_checks": st.integers(0, 2),
            "judge_cost_usd": st.sampled_from([None, 0.25]),
        }
    ),
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(_episode, max_size=40))
def test_the_merged_breakdown_is_the_one_counted_group_by_group(
    episodes: list[EpisodeStats],
) -> None:
    assert _merged(episodes) == _direct(episodes)


def test_groups_past_the_exact_limit_of_their_sketches_are_the_same() -> None:
    """Enough episodes that step sketches switch to buckets (over 2,048 values), in the
    groups and in the aggregates they are merged from; a few groups stay exact."""
    episodes = [
        dataclasses.replace(
            _BASE,
            task_id=f"t{n % 7}",
            epoch=n,
            category=("normal", "edge", "rare")[0 if n >= 3000 else 2 if n % 30 == 0 else n % 2],
            difficulty=1 + n // 1500 % 2,
            tags=(("x",), ("x", "y"))[n // 1500 % 2],
            passed=n % 5 != 0,
            step_agent_s=tuple(_EIGHTHS[(n * 7 + i) % 40] for i in range(4)),
            step_tool_s=tuple(_EIGHTHS[(n * 3 + i) % 40] for i in range(4)),
            duration_s=_EIGHTHS[n % 40],
        )
        for n in range(3100)
    ]
    assert _merged(episodes) == _direct(episodes)
