"""The run summary: the headline numbers written to ``summary.json``.

A :class:`Summarizer` takes the records one at a time (the runner feeds it each
episode as it is stored, so finishing a run reads nothing back): each is reduced to an
:class:`~toolproof.metrics._episode.EpisodeStats` and counted in the run's
:class:`~toolproof.metrics._aggregate.Aggregate`, in its breakdown groups and in its
task's counts. Its memory is bounded whatever the number of episodes: counts, sums and
quantile sketches; the per-episode numbers are in ``run.db`` and
``trajectories.jsonl`` (:func:`episode_numbers` gives them for one record).
``summarize`` is the same over an iterable.
Infra errors are counted and reported but kept out of every denominator. Every
metric name is documented in ``docs/metrics.md``.

Layout::

    toolproof_summary, suite, agent, track, config, environment
    episodes            planned, finished, scored, infra_errors, infra_retries, complete
    <metric block>      success, pass_at_k, pass_hat_k, pass_k_tasks, levels, pass_strict,
                        pass_loose, efficiency, tool_use, redundancy, latency, tokens,
                        cost, judge, answers, terminations, failure_modes
    breakdown           {category|type|difficulty|domain|tag|scoring: {group: <metric block>}}
    tasks               {task id: {facts..., episodes, scored, passed, passed_loose, infra_errors,
                                   levels, failure_modes, fraction_mean}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from toolproof.results import EpisodeRecord
from toolproof.scoring import Level
from toolproof.upstream.agentdojo_metrics import AgentDojoAccumulator
from toolproof.upstream.bfcl_metrics import bfcl_summary

from ._aggregate import PENDING, Aggregate, _r
from ._breakdown import Breakdown
from ._episode import EpisodeStats, episode_stats
from ._side import SideUsage
from .security import SecurityAccumulator

SUMMARY_VERSION = 3
"""Version of the summary.json layout (``toolproof_summary``); bumped on incompatible change.

3: ``tasks.<id>`` holds counts, no longer a per-episode ``epochs`` list."""


def episode_numbers(record: EpisodeRecord) -> dict[str, Any]:
    """One episode's numbers as the metrics see them (what summary.json v2 listed per epoch)."""
    stats = episode_stats(record)
    return {
        "epoch": stats.epoch,
        "passed": stats.passed,
        "passed_loose": stats.passed_loose,
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


class _TaskCounts:
    """One task's counts for ``summary.json``'s ``tasks`` (a few numbers, not a list)."""

    __slots__ = (
        "episodes",
        "facts",
        "fraction",
        "infra",
        "levels",
        "loose",
        "modes",
        "passed",
        "scored",
    )

    def __init__(self, stats: EpisodeStats) -> None:
        self.facts = {
            "category": stats.category,
            "type": stats.type,
            "difficulty": stats.difficulty,
            "domain": stats.domain,
            "tags": list(stats.tags),
            "judged": stats.judged,
        }
        self.episodes = self.scored = self.passed = self.loose = self.infra = 0
        self.levels: Counter[str] = Counter()
        self.modes: Counter[str] = Counter()
        self.fraction = 0.0

    def add(self, stats: EpisodeStats) -> None:
        self.episodes += 1
        if stats.infra_error:
            self.infra += 1
            return
        if stats.task_error:
            return
        self.scored += 1
        self.passed += stats.passed
        self.loose += stats.passed_loose
        self.levels[stats.level] += 1
        self.fraction += stats.fraction
        if stats.failure_mode is not None and not stats.passed:
            self.modes[stats.failure_mode] += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.facts,
            "episodes": self.episodes,
            "scored": self.scored,
            "passed": self.passed,
            "passed_loose": self.loose,
            "infra_errors": self.infra,
            "success_rate": _r(self.passed / self.scored) if self.scored else None,
            "fraction_mean": _r(self.fraction / self.scored) if self.scored else None,
            "levels": {level.value: self.levels[level.value] for level in Level},
            "failure_modes": dict(sorted(self.modes.items())),
        }


class Summarizer:
    """The summary of a run, counted one record at a time in bounded memory."""

    def __init__(self) -> None:
        self.overall = Aggregate()
        self.breakdown = Breakdown()
        self.security = SecurityAccumulator()
        self.agentdojo = AgentDojoAccumulator()
        self.user_model = SideUsage()
        self.tasks: dict[str, _TaskCounts] = {}
        self._added = 0

    def add(self, record: EpisodeRecord) -> None:
        """Count one episode (in any order; a key must be added once)."""
        stats = episode_stats(record)
        self.security.add(record)
        self.agentdojo.add(record)
        self.user_model.add(record)
        self.overall.add(stats)
        self.breakdown.add(stats)
        task = self.tasks.get(stats.task_id)
        if task is None:
            task = self.tasks[stats.task_id] = _TaskCounts(stats)
        task.add(stats)
        self._added += 1
        if self._added % PENDING == 0:  # every group at once: at most PENDING episodes held
            self.overall.flush()
            self.breakdown.flush()

    def summary(self, meta: dict[str, Any]) -> dict[str, Any]:
        """The summary.json document of what was added.

        Args:
            meta: The run's recorded facts (config, suite, track, environment, planned).
        """
        return _document(self, meta)


def summarize(records: Iterable[EpisodeRecord], meta: dict[str, Any]) -> dict[str, Any]:
    """Summary of a run: config facts, the metric block overall and broken down, per task.

    Args:
        records: The run's episodes, in any order; consumed once (a generator is fine).
        meta: The run's recorded facts (config, suite, track, environment, planned).

    Returns:
        The summary.json document.
    """
    summarizer = Summarizer()
    for record in records:
        summarizer.add(record)
    return summarizer.summary(meta)


def _document(summarizer: Summarizer, meta: dict[str, Any]) -> dict[str, Any]:
    overall, security = summarizer.overall, summarizer.security
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
        "breakdown": summarizer.breakdown.to_dict(),
        "tasks": {key: summarizer.tasks[key].to_dict() for key in sorted(summarizer.tasks)},
    }
    if security.attacked:
        summary["security"] = security.to_dict()
    user_model = summarizer.user_model
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
    agentdojo_section = summarizer.agentdojo.to_dict()
    if agentdojo_section is not None:
        summary["agentdojo"] = agentdojo_section
    return summary
