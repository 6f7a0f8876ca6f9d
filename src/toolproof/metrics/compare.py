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
``allow_mismatch``. See ``docs/metrics.md#comparison``.
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
    "Flip",
    "Key",
    "MetricChange",
    "compare_runs",
    "compare_stats",
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
        return {"toolproof_comparison": 1, **asdict(self)}


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
    """What names a run in a comparison: where, agent, suite, seed, track."""
    suite = meta.get("suite", {})
    return {
        "run": None if run_dir is None else str(run_dir),
        "agent": meta.get("config", {}).get("agent"),
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
    with RunReader(run_dir) as reader:
        meta = reader.meta()
        episodes = {(r.task.id, r.epoch): episode_stats(r) for r in reader.records()}
    return meta, episodes


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

    Raises:
        ComparisonMismatch: the runs differ in suite, version, content, seed or
            track and ``allow_mismatch`` is false.
        FileNotFoundError: a directory is not a run.
    """
    meta_a, stats_a = load_run(run_a)
    meta_b, stats_b = load_run(run_b)
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
        **counts,
    )
