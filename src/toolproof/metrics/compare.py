"""Paired comparison of two runs of the same suite: what changed, and is it significant.

Episodes are paired by task instance: the same task id and epoch in both runs
(with the same suite version, content, seed and prompt track, the instances
are identical). Pairs where either episode is an infra error are left out.

* Binary metrics (success, pass_loose, hallucination) use the exact McNemar
  test on the discordant pairs.
* Continuous metrics (fraction, tool calls, efficiency, ...) use a paired
  percentile bootstrap over tasks: each task's mean over its paired epochs, in
  each run, so repeated epochs of one task are not treated as independent.

A change is significant when ``p < alpha`` (0.05). Runs of different suites,
suite versions or contents, seeds or prompt tracks are refused unless
``allow_mismatch``.

A comparison can be *invalid* as a gate (:attr:`Comparison.problems`): either
run scored nothing (every episode an infra error, or none ran), run B scored
fewer episodes than run A, or the runs cover different tasks. A regression gate
must not pass on such a comparison, since the episodes left out are exactly the
ones that could have regressed. See ``docs/metrics.md#comparison``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolproof.results import RunReader
from toolproof.spec import ToolproofError

from ._episode import EpisodeStats, episode_stats
from ._paired import METRICS, CompareMetric, MetricChange, metric_row

__all__ = [
    "METRICS",
    "CompareMetric",
    "Comparison",
    "ComparisonMismatch",
    "Coverage",
    "Flip",
    "Key",
    "MetricChange",
    "compare_runs",
    "compare_stats",
    "coverage",
    "coverage_problems",
    "identity",
    "load_run",
    "mismatches",
]

Key = tuple[str, int]
"""A task instance: (task id, epoch)."""


@dataclass(frozen=True)
class Flip:
    """A task instance that passed in one run and failed in the other."""

    task: str
    epoch: int
    a_level: str
    b_level: str
    a_failure_mode: str | None
    b_failure_mode: str | None


@dataclass(frozen=True)
class Coverage:
    """What one run holds: how many episodes were scored, which tasks, the first infra error.

    Attributes:
        episodes: Episodes recorded.
        scored: Episodes that are not infra errors.
        infra_errors: Episodes that are.
        tasks: Task ids with at least one scored episode.
        first_infra_error: The recorded error of the first infra-error episode
            (in task, epoch order), so a message can say why.
    """

    episodes: int
    scored: int
    infra_errors: int
    tasks: frozenset[str]
    first_infra_error: str | None = None


def coverage(episodes: dict[Key, EpisodeStats], errors: dict[Key, str] | None = None) -> Coverage:
    """The :class:`Coverage` of a run's episodes; ``errors`` are their recorded errors."""
    infra = sorted(k for k, s in episodes.items() if s.infra_error)
    first = None
    if infra and errors:
        first = next((errors[k] for k in infra if errors.get(k)), None)
    return Coverage(
        episodes=len(episodes),
        scored=len(episodes) - len(infra),
        infra_errors=len(infra),
        tasks=frozenset(k[0] for k, s in episodes.items() if not s.infra_error),
        first_infra_error=first,
    )


def _names(ids: set[str] | frozenset[str], limit: int = 8) -> str:
    ordered = sorted(ids)
    shown = ", ".join(ordered[:limit])
    return shown + (f" (+{len(ordered) - limit} more)" if len(ordered) > limit else "")


def _nothing_scored(label: str, c: Coverage) -> str:
    if c.episodes == 0:
        return f"{label} has no episodes: nothing was run"
    why = f"; first error: {c.first_infra_error}" if c.first_infra_error else ""
    return (
        f"{label} has no scored episodes: {c.infra_errors} of {c.episodes} were "
        f"infrastructure errors{why}"
    )


def coverage_problems(a: Coverage, b: Coverage) -> tuple[list[str], list[str]]:
    """Why a comparison of B (candidate) with A (baseline) cannot gate anything.

    Returns:
        ``(fatal, partial)``: *fatal* problems (a run scored nothing) void the
        comparison whatever the options; *partial* ones (B scored fewer
        episodes than A, the runs cover different tasks) can be accepted on
        purpose (``--allow-partial``). Both empty when the comparison is sound.
    """
    fatal = [_nothing_scored(label, c) for label, c in (("A", a), ("B", b)) if c.scored == 0]
    if fatal:
        return fatal, []
    partial = []
    if b.scored < a.scored:
        partial.append(
            f"B scored fewer episodes than A: {b.scored} against {a.scored} "
            f"(B had {b.infra_errors} infrastructure errors of {b.episodes} episodes)"
        )
    only_a, only_b = a.tasks - b.tasks, b.tasks - a.tasks
    if only_a:
        partial.append(f"tasks scored only in A ({len(only_a)}): {_names(only_a)}")
    if only_b:
        partial.append(f"tasks scored only in B ({len(only_b)}): {_names(only_b)}")
    return [], partial


@dataclass
class Comparison:
    """The comparison of run A (before) with run B (after)."""

    a: dict[str, Any]
    b: dict[str, Any]
    alpha: float
    paired: int
    only_a: int
    only_b: int
    infra_excluded: int
    metrics: list[MetricChange]
    regressions: list[Flip] = field(default_factory=list)
    improvements: list[Flip] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    coverage_a: Coverage | None = None
    coverage_b: Coverage | None = None
    fatal: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    varied: str | None = None
    """What sets the runs apart, when they pair as two settings of one experiment (see
    :func:`varied`): e.g. "only the model: A openai:gpt-4o-mini, B anthropic:claude-haiku-4-5"."""

    @property
    def problems(self) -> list[str]:
        """Every reason this comparison cannot gate (fatal first); empty when sound."""
        return [*self.fatal, *self.partial]

    def gate_failures(self, *, allow_partial: bool = False) -> list[str]:
        """The problems that fail a gate: fatal ones always, partial unless allowed."""
        return [*self.fatal, *([] if allow_partial else self.partial)]

    def metric(self, name: str) -> MetricChange:
        """The row of a metric.

        Raises:
            KeyError: unknown metric, naming the known ones.
        """
        for row in self.metrics:
            if row.name == name:
                return row
        raise KeyError(f"no metric {name!r}; known: {', '.join(METRICS)}")

    def regressed(self, name: str = "success") -> bool:
        """Whether B is significantly worse than A on a metric."""
        return self.metric(name).verdict == "worse"

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-ready data."""
        data = asdict(self)
        for side in ("coverage_a", "coverage_b"):
            if data[side] is not None:
                data[side]["tasks"] = sorted(data[side]["tasks"])
        return {"toolproof_comparison": 1, **data}


class ComparisonMismatch(ToolproofError):
    """Two runs cannot be compared as paired: different suite, content, seed or track."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__(
            "the runs are not comparable:\n"
            + "\n".join(f"  - {r}" for r in reasons)
            + "\nfix: compare runs of the same suite version, seed and prompt track, "
            "or pass --allow-mismatch to compare anyway"
        )


def identity(meta: dict[str, Any], run_dir: Path | None = None) -> dict[str, Any]:
    """What names a run in a comparison: where, agent, model, suite, seed, track."""
    suite = meta.get("suite", {})
    return {
        "run": None if run_dir is None else str(run_dir),
        "agent": meta.get("config", {}).get("agent"),
        "model": meta.get("config", {}).get("model"),
        "suite": suite.get("name"),
        "version": suite.get("version"),
        "digest": suite.get("digest"),
        "seed": suite.get("seed"),
        "track": meta.get("track"),
    }


def mismatches(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Why two run identities (:func:`identity`) cannot be paired; empty when they can."""
    reasons = []
    if a["suite"] != b["suite"]:
        reasons.append(f"different suites: A ran {a['suite']!r}, B ran {b['suite']!r}")
    if a["version"] != b["version"]:
        reasons.append(f"different suite versions: A {a['version']}, B {b['version']}")
    elif a["digest"] != b["digest"]:
        short = (str(a["digest"])[:12], str(b["digest"])[:12])
        reasons.append(
            f"suite content differs at the same version (digest {short[0]} vs {short[1]})"
        )
    if a["seed"] != b["seed"]:
        reasons.append(f"different seeds: A {a['seed']}, B {b['seed']} (instances differ)")
    if a["track"] != b["track"]:
        reasons.append(f"different prompt tracks: A {a['track']!r}, B {b['track']!r}")
    return reasons


def varied(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """What tells two comparable runs apart: only the model, only the agent, or both.

    Runs of one agent (``--agent``) with two models (``--model``) pair task by task
    like any other two runs; this names the change, so a comparison of models says so.
    """
    agent_differs = a.get("agent") != b.get("agent")
    model_differs = a.get("model") != b.get("model")
    if model_differs and not agent_differs:
        return f"only the model: A {a.get('model') or '(none)'}, B {b.get('model') or '(none)'}"
    if agent_differs and not model_differs:
        return f"only the agent: A {a.get('agent')}, B {b.get('agent')}"
    if agent_differs:
        return "the agent and the model"
    return None


def compare_stats(
    a: dict[Key, EpisodeStats],
    b: dict[Key, EpisodeStats],
    *,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[list[MetricChange], list[Flip], list[Flip], dict[str, int]]:
    """Compare two runs' episodes, keyed by (task id, epoch).

    Returns:
        The metric rows, the regressions (A passed, B failed), the improvements
        and the pairing counts (``paired``, ``only_a``, ``only_b``, ``infra_excluded``).
    """
    shared = sorted(a.keys() & b.keys())
    pairs = [(a[k], b[k]) for k in shared if not (a[k].infra_error or b[k].infra_error)]
    counts = {
        "paired": len(pairs),
        "only_a": len(a.keys() - b.keys()),
        "only_b": len(b.keys() - a.keys()),
        "infra_excluded": len(shared) - len(pairs),
    }
    rows = [metric_row(m, pairs, alpha, resamples, seed) for m in METRICS.values()]
    regressions: list[Flip] = []
    improvements: list[Flip] = []
    for x, y in pairs:
        if x.passed != y.passed:
            flip = Flip(x.task_id, x.epoch, x.level, y.level, x.failure_mode, y.failure_mode)
            (regressions if x.passed else improvements).append(flip)
    return rows, regressions, improvements, counts


def load_run(run_dir: Path) -> tuple[dict[str, Any], dict[Key, EpisodeStats]]:
    """A run's meta and its episodes' stats, keyed by (task id, epoch)."""
    meta, episodes, _ = _load(run_dir)
    return meta, episodes


def _load(run_dir: Path) -> tuple[dict[str, Any], dict[Key, EpisodeStats], dict[Key, str]]:
    """Meta, episode stats and the recorded errors of infra-error episodes."""
    episodes: dict[Key, EpisodeStats] = {}
    errors: dict[Key, str] = {}
    with RunReader(run_dir) as reader:
        meta = reader.meta()
        for r in reader.records():
            key = (r.task.id, r.epoch)
            episodes[key] = episode_stats(r)
            if r.infra_error and r.trajectory.error:
                errors[key] = r.trajectory.error
    return meta, episodes, errors


def compare_runs(
    run_a: Path,
    run_b: Path,
    *,
    allow_mismatch: bool = False,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare run B (after) against run A (before).

    The result's :attr:`Comparison.problems` say when it cannot gate (a run
    scored nothing, B scored fewer episodes, different tasks); callers that
    gate must check them.

    Raises:
        ComparisonMismatch: the runs differ in suite, version, content, seed or
            track and ``allow_mismatch`` is false.
        FileNotFoundError: a directory is not a run.
    """
    meta_a, stats_a, errors_a = _load(run_a)
    meta_b, stats_b, errors_b = _load(run_b)
    cov_a, cov_b = coverage(stats_a, errors_a), coverage(stats_b, errors_b)
    fatal, partial = coverage_problems(cov_a, cov_b)
    id_a, id_b = identity(meta_a, run_a), identity(meta_b, run_b)
    reasons = mismatches(id_a, id_b)
    if reasons and not allow_mismatch:
        raise ComparisonMismatch(reasons)
    live = [str(i["track"] or "").startswith("live") for i in (id_a, id_b)]
    if live[0] != live[1]:  # real services are never mixed with simulated ones, even when asked
        raise ComparisonMismatch(
            [
                f"A is on track {id_a['track']!r}, B on {id_b['track']!r}: a live-track run is "
                "compared only with live-track runs (--allow-mismatch does not change this)"
            ]
        )
    rows, regressions, improvements, counts = compare_stats(
        stats_a, stats_b, alpha=alpha, resamples=resamples, seed=seed
    )
    return Comparison(
        a=id_a,
        b=id_b,
        alpha=alpha,
        metrics=rows,
        regressions=regressions,
        improvements=improvements,
        mismatches=reasons,
        coverage_a=cov_a,
        coverage_b=cov_b,
        fatal=fatal,
        partial=partial,
        varied=varied(id_a, id_b),
        **counts,
    )
