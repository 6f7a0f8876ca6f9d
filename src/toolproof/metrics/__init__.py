"""Metrics: statistics over episode results, the run summary, comparisons and baselines.

Map:
    * :mod:`toolproof.metrics.stats` - pure, stdlib-only statistics: Wilson
      intervals, percentile bootstrap, pass@k / pass^k, exact McNemar, paired
      bootstrap and percentiles.
    * :mod:`toolproof.metrics.summary` - ``summarize(records, meta)``, the
      summary.json document: per-episode reduction (``_episode``, ``_calls``),
      the streaming metric block (``_aggregate``) and its breakdown
      (``_breakdown``). Names and definitions: ``docs/metrics.md``.
    * :mod:`toolproof.metrics.compare` - paired comparison of two runs
      (McNemar, paired bootstrap; rows in ``_paired``) and the flipped tasks.
    * :mod:`toolproof.metrics.baseline` - named baseline runs per suite version.
    * :mod:`toolproof.metrics.failures` - why episodes failed: failed episodes by failure
      mode with their recorded errors first, infra errors apart, the infra banner.
"""

from typing import TYPE_CHECKING, Any

from toolproof._lazy import load_name

if TYPE_CHECKING:
    from toolproof.metrics.baseline import (
        BaselineError,
        find_baseline,
        list_baselines,
        save_baseline,
    )
    from toolproof.metrics.compare import (
        Comparison,
        ComparisonMismatch,
        Flip,
        compare_runs,
        compare_stats,
    )
    from toolproof.metrics.failures import (
        FailedEpisode,
        FailureReport,
        failure_report,
        failures_by_mode,
        infra_banner,
    )
    from toolproof.metrics.stats import (
        PairedDiff,
        Proportion,
        bootstrap_mean_ci,
        mcnemar_exact,
        mean_pass_at_k,
        mean_pass_hat_k,
        median,
        p95,
        paired_bootstrap_diff,
        pass_at_k,
        pass_hat_k,
        percentile,
        proportion,
        wilson_interval,
    )
    from toolproof.metrics.summary import (
        summarize,
    )

_HOMES = {
    "baseline": ("BaselineError", "find_baseline", "list_baselines", "save_baseline"),
    "compare": ("Comparison", "ComparisonMismatch", "Flip", "compare_runs", "compare_stats"),
    "failures": (
        "FailedEpisode",
        "FailureReport",
        "failure_report",
        "failures_by_mode",
        "infra_banner",
    ),
    "stats": (
        "PairedDiff",
        "Proportion",
        "bootstrap_mean_ci",
        "mcnemar_exact",
        "mean_pass_at_k",
        "mean_pass_hat_k",
        "median",
        "p95",
        "paired_bootstrap_diff",
        "pass_at_k",
        "pass_hat_k",
        "percentile",
        "proportion",
        "wilson_interval",
    ),
    "summary": ("summarize",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Load a name on first use: a run needs :func:`summarize`, not the comparisons,
    baselines and failure reports beside it."""
    return load_name(__name__, _HOME_OF, name)


__all__ = [
    "BaselineError",
    "Comparison",
    "ComparisonMismatch",
    "FailedEpisode",
    "FailureReport",
    "Flip",
    "PairedDiff",
    "Proportion",
    "bootstrap_mean_ci",
    "compare_runs",
    "compare_stats",
    "failure_report",
    "failures_by_mode",
    "find_baseline",
    "infra_banner",
    "list_baselines",
    "mcnemar_exact",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "median",
    "p95",
    "paired_bootstrap_diff",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "proportion",
    "save_baseline",
    "summarize",
    "wilson_interval",
]
