"""The run summary: the headline numbers written to ``summary.json``.

``summarize`` streams the records once: each is reduced to an
:class:`~toolproof.metrics._episode.EpisodeStats` and counted in the run's
:class:`~toolproof.metrics._aggregate.Aggregate` and in its breakdown groups.
Infra errors are counted and reported but kept out of every denominator. Every
metric name is documented in ``docs/metrics.md``.

Layout::

    toolproof_summary, suite, agent, track, config, environment
    episodes            planned, finished, scored, infra_errors, infra_retries, complete
    <metric block>      success, pass_at_k, pass_hat_k, pass_k_tasks, levels, pass_strict,
                        pass_loose, efficiency, tool_use, redundancy, latency, tokens,
                        cost, judge, answers, terminations, failure_modes
    breakdown           {category|type|difficulty|domain|tag|scoring: {group: <metric block>}}
    tasks               {task id: {facts..., epochs: [per-episode numbers]}}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolproof.results import EpisodeRecord
from toolproof.upstream.agentdojo_metrics import AgentDojoAccumulator
from toolproof.upstream.bfcl_metrics import bfcl_summary

from ._aggregate import Aggregate, _r
from ._breakdown import Breakdown
from ._episode import EpisodeStats, episode_stats
from ._side import SideUsage
from .security import SecurityAccumulator

SUMMARY_VERSION = 2
"""Version of the summary.json layout (``toolproof_summary``); bumped on incompatible change."""


def _epoch_entry(stats: EpisodeStats) -> dict[str, Any]:
    return {
        "epoch": stats.epoch,
        "passed": stats.passed,
        "level": stats.level,
        "termination": stats.termination,
        "fraction": _r(stats.fraction),
        "infra_error": stats.infra_error,
        "failure_mode": stats.failure_mode,
        "failure_step": stats.failure_step,
        "tool_calls": stats.calls.calls,
        "reference_calls": stats.reference_calls,
        "efficiency": _r(stats.efficiency),
        "redundant_calls": stats.calls.redundant,
        "agent_s": _r(stats.agent_s),
        "tool_s": _r(stats.tool_s),
        "tokens": stats.tokens,
        "cost_usd": _r(stats.cost_usd),
        "pricing": stats.pricing,
    }


def summarize(records: Iterable[EpisodeRecord], meta: dict[str, Any]) -> dict[str, Any]:
    """Summary of a run: config facts, the metric block overall and broken down, per task.

    Args:
        records: The run's episodes, in any order; consumed once (a generator is fine).
        meta: The run's recorded facts (config, suite, track, environment, planned).

    Returns:
        The summary.json document.
    """
    overall = Aggregate()
    breakdown = Breakdown()
    security = SecurityAccumulator()
    agentdojo = AgentDojoAccumulator()
    tasks: dict[str, dict[str, Any]] = {}
    user_model = SideUsage()
    for record in records:
        stats = episode_stats(record)
        user_model.add(record)
        security.add(record)
        agentdojo.add(record)
        overall.add(stats)
        breakdown.add(stats)
        entry = tasks.setdefault(
            stats.task_id,
            {
                "category": stats.category,
                "type": stats.type,
                "difficulty": stats.difficulty,
                "domain": stats.domain,
                "tags": list(stats.tags),
                "judged": stats.judged,
                "epochs": [],
            },
        )
        entry["epochs"].append(_epoch_entry(stats))
    for entry in tasks.values():
        entry["epochs"].sort(key=lambda e: e["epoch"])
    block = overall.to_dict()
    planned = meta.get("planned", overall.finished)
    episodes = {
        "planned": planned,
        **block.pop("episodes"),
        "complete": overall.finished >= planned,
    }
    summary: dict[str, Any] = {
        "toolproof_summary": SUMMARY_VERSION,
        "suite": meta.get("suite", {}),
        "agent": meta.get("config", {}).get("agent"),
        "model": meta.get("config", {}).get("model"),
        "track": meta.get("track"),
        "config": meta.get("config", {}),
        "environment": meta.get("environment", {}),
        "episodes": episodes,
        **block,
        "breakdown": breakdown.to_dict(),
        "tasks": dict(sorted(tasks.items())),
    }
    if security.attacked:
        summary["security"] = security.to_dict()
    if user_model.calls:  # the model-played user's spend, apart from the agent's
        summary["user_model"] = {"model": meta.get("config", {}).get("user_model")}
        summary["user_model"].update(user_model.to_dict())
    live = meta.get("config", {}).get("live")
    if live:  # the live track: real services, scored apart from the standard track
        summary["live"] = {
            "track": meta.get("track"),
            "mode": live.get("mode"),
            "cassettes_digest": live.get("digest"),
            "recorded_to": live.get("recorded_to"),
            "success_rate": block.get("success", {}).get("rate"),
        }
    bfcl = bfcl_summary(summary["tasks"])
    if bfcl is not None:
        summary["bfcl"] = bfcl
    agentdojo_section = agentdojo.to_dict()
    if agentdojo_section is not None:
        summary["agentdojo"] = agentdojo_section
    return summary
