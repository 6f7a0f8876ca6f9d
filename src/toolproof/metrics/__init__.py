"""Metrics: statistics over episode results.

Map:
    * :mod:`toolproof.metrics.stats` - pure, stdlib-only statistics: Wilson
      intervals, percentile bootstrap, pass@k / pass^k, exact McNemar, paired
      bootstrap and percentiles.
"""

from toolproof.metrics.summary import summarize
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

__all__ = [
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
    "summarize",
    "wilson_interval",
]
