"""Statistics for agent benchmark results: intervals, pass@k, pass^k and paired tests.

Every function here is pure (the bootstrap keeps its random draws for reuse, nothing
else) and uses only the standard library (``math``, ``random``, ``statistics``), so
results are reproducible bit for bit given the same inputs and seed. Exact formulas and
references are in each docstring and in ``docs/metrics-statistics.md``.

Map:
    * Proportions: :func:`wilson_interval`, :func:`proportion` / :class:`Proportion`.
    * Means: :func:`bootstrap_mean_ci` (percentile bootstrap, e.g. over per-task
      success rates, which clusters repeated attempts by task).
    * Repeated attempts: :func:`pass_at_k`, :func:`pass_hat_k` and their task
      averages :func:`mean_pass_at_k`, :func:`mean_pass_hat_k`.
    * Comparing two systems on the same tasks: :func:`mcnemar_exact` (binary
      outcomes) and :func:`paired_bootstrap_diff` / :class:`PairedDiff`.
    * Order statistics: :func:`percentile`, :func:`median`, :func:`p95`.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import random
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

from ._passk import _check_counts, mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k

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
    "wilson_interval",
]


# --------------------------------------------------------------------------- validation


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(
            f"confidence must be strictly between 0 and 1, got {confidence!r}; "
            "use e.g. 0.95 for a 95% interval"
        )


def _check_resamples(resamples: int) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")


# --------------------------------------------------------------------------- proportions


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    With ``p = successes / n`` and ``z`` the ``1 - (1 - confidence) / 2`` quantile
    of the standard normal (``statistics.NormalDist().inv_cdf``)::

        centre    = (p + z**2 / (2 n)) / (1 + z**2 / n)
        halfwidth = z / (1 + z**2 / n) * sqrt(p (1 - p) / n + z**2 / (4 n**2))
        interval  = (centre - halfwidth, centre + halfwidth)

    Unlike the Wald interval ``p +/- z sqrt(p(1-p)/n)`` it stays inside [0, 1] and
    keeps close to nominal coverage for small ``n`` and for ``p`` near 0 or 1,
    which is the usual case for agent success rates. The bounds are clamped to
    [0, 1] against rounding, and are exactly 0.0 / 1.0 when ``successes`` is 0 / ``n``.

    References:
        Wilson, E. B. (1927). Probable inference, the law of succession, and
        statistical inference. JASA 22(158), 209-212.
        Brown, L. D., Cai, T. T., DasGupta, A. (2001). Interval estimation for a
        binomial proportion. Statistical Science 16(2), 101-133.

    Args:
        successes: Number of successes, ``0 <= successes <= n``.
        n: Number of trials. ``n == 0`` gives the uninformative ``(0.0, 1.0)``.
        confidence: Two-sided confidence level in (0, 1).

    Returns:
        ``(low, high)``.

    Raises:
        ValueError: If the counts or the confidence level are out of range.
    """
    _check_counts(successes, n, names=("successes", "n"))
    _check_confidence(confidence)
    if n == 0:
        return (0.0, 1.0)
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class Proportion:
    """A success rate with its Wilson interval, ready for a JSON report.

    Attributes:
        successes: Number of successes.
        n: Number of trials.
        rate: ``successes / n``; **0.0 when n == 0** (check :attr:`empty`, not the
            rate, to tell "no data" from "all failed").
        ci_low: Lower Wilson bound; 0.0 when ``n == 0``.
        ci_high: Upper Wilson bound; 1.0 when ``n == 0``.
    """

    successes: int
    n: int
    rate: float
    ci_low: float
    ci_high: float

    @property
    def empty(self) -> bool:
        """True when there were no trials, so ``rate`` carries no information."""
        return self.n == 0

    def to_dict(self) -> dict[str, int | float | bool]:
        """Return a JSON-ready dict of the fields plus ``empty``."""
        return {**asdict(self), "empty": self.empty}


def proportion(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """Build a :class:`Proportion` with a Wilson interval (see :func:`wilson_interval`).

    Args:
        successes: Number of successes, ``0 <= successes <= n``.
        n: Number of trials; ``n == 0`` yields rate 0.0, interval (0.0, 1.0) and
            ``Proportion.empty == True``.
        confidence: Two-sided confidence level in (0, 1).

    Returns:
        The proportion and its interval.

    Raises:
        ValueError: If the counts or the confidence level are out of range.
    """
    low, high = wilson_interval(successes, n, confidence)
    rate = successes / n if n else 0.0
    return Proportion(successes=successes, n=n, rate=rate, ci_low=low, ci_high=high)


# --------------------------------------------------------------------------- bootstrap


def _resampled_means(values: Sequence[float], resamples: int, seed: int) -> list[float]:
    """Sorted means of ``resamples`` with-replacement resamples of ``values``.

    The draws are exactly those of ``random.Random(seed).choices(values, k=n)`` called
    ``resamples`` times (item ``floor(random() * n)`` each), summed in the same order, so
    the means are the same floats bit for bit. They are taken from :func:`_draws`: the
    random stream of a seed is drawn once and kept (every breakdown group of a summary
    uses the same seed), and the indices, items and sums are made in C, not in a Python
    loop: about 4 times faster at 100 values.

    When every value is the same (one task, say) every resample is ``values`` itself, so
    each mean is the same float: it is computed once (the same sum in the same order)
    instead of drawing ``resamples`` samples that cannot differ.
    """
    n = len(values)
    if all(_same(v, values[0]) for v in values):
        return [sum(values) / n] * resamples
    if n * resamples > _CACHED_DRAWS:  # too many to keep: drawn as they go, as before
        rng = random.Random(seed)
        means = [sum(rng.choices(values, k=n)) / n for _ in range(resamples)]
    else:
        drawn = list(map(list(values).__getitem__, _draws(n, resamples, seed)))
        means = [sum(drawn[i : i + n]) / n for i in range(0, n * resamples, n)]
    means.sort()
    return means


_CACHED_DRAWS = 300_000
"""How many values of the random stream are kept for a seed: 2,000 resamples of up to 150
values, or any group the summary's bootstrap budget caps (150,000 draws)."""


@functools.lru_cache(maxsize=1)
def _uniforms(seed: int) -> list[float]:
    """The first :data:`_CACHED_DRAWS` values of ``random.Random(seed).random()`` (a list:
    iterating it makes no new float, unlike an ``array``)."""
    rng = random.Random(seed)
    return list(itertools.starmap(rng.random, itertools.repeat((), _CACHED_DRAWS)))


@functools.lru_cache(maxsize=32)
def _draws(n: int, resamples: int, seed: int) -> bytes | array[int]:
    """The indices ``random.Random(seed).choices`` picks in ``resamples`` calls with
    ``k=n`` from ``n`` items: ``floor(random() * n)`` for each of the first ``n *
    resamples`` values of the stream (``n * resamples <= _CACHED_DRAWS``), made in C and
    kept compact (a byte each up to 256 items) for the next group of that size."""
    uniforms = itertools.islice(_uniforms(seed), n * resamples)
    indices = map(math.floor, map(operator.mul, uniforms, itertools.repeat(float(n))))
    return bytes(indices) if n <= 256 else array("I", indices)


def _same(a: float, b: float) -> bool:
    """The same number of the same type and sign (``0.0`` and ``-0.0`` differ here)."""
    return type(a) is type(b) and a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _percentile_sorted(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile of an already sorted, non-empty sequence."""
    h = (len(ordered) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def bootstrap_mean_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval for the mean.

    Draws ``resamples`` samples of size ``len(values)`` with replacement using
    ``random.Random(seed)``, takes each sample's mean, and returns the
    ``alpha/2`` and ``1 - alpha/2`` percentiles (``alpha = 1 - confidence``,
    linear interpolation as in :func:`percentile`) of those means.

    For agent success with several attempts per task, pass one value per task
    (that task's mean success): resampling tasks rather than attempts respects
    the clustering of attempts within a task, so the interval is not falsely
    narrow.

    References:
        Efron, B., Tibshirani, R. J. (1993). An Introduction to the Bootstrap,
        ch. 13 (the percentile interval). Chapman & Hall.

    Args:
        values: The sample; must be non-empty.
        confidence: Two-sided confidence level in (0, 1).
        resamples: Number of bootstrap resamples, >= 1.
        seed: Seed for ``random.Random``; the same inputs and seed give the same
            interval.

    Returns:
        ``(low, high)``.

    Raises:
        ValueError: If ``values`` is empty or a parameter is out of range.
    """
    if len(values) == 0:
        raise ValueError("bootstrap_mean_ci needs at least one value, got an empty sequence")
    _check_confidence(confidence)
    _check_resamples(resamples)
    means = _resampled_means(values, resamples, seed)
    alpha = 1.0 - confidence
    return (
        _percentile_sorted(means, 100.0 * alpha / 2.0),
        _percentile_sorted(means, 100.0 * (1.0 - alpha / 2.0)),
    )


@dataclass(frozen=True)
class PairedDiff:
    """Result of :func:`paired_bootstrap_diff`.

    Attributes:
        mean_a: Mean of the baseline ``a``.
        mean_b: Mean of the candidate ``b``.
        diff: ``mean_b - mean_a`` (positive means ``b`` scored higher).
        ci_low: Lower percentile-bootstrap bound of ``diff``.
        ci_high: Upper percentile-bootstrap bound of ``diff``.
        p_value: Two-sided bootstrap p-value for ``diff == 0``.
    """

    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float

    def to_dict(self) -> dict[str, float]:
        """Return a JSON-ready dict of the fields."""
        return asdict(self)


def paired_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedDiff:
    """Paired bootstrap for the difference of means ``mean(b) - mean(a)``.

    ``a[i]`` and ``b[i]`` must be scores of the same unit (typically the same
    task's mean success under two agents). The paired differences
    ``d[i] = b[i] - a[i]`` are resampled with replacement ``resamples`` times
    (``random.Random(seed)``), giving bootstrap means ``d*_1..d*_B``. Then:

    * ``ci_low, ci_high`` are the ``alpha/2`` and ``1 - alpha/2`` percentiles of
      the ``d*`` (linear interpolation), ``alpha = 1 - confidence``;
    * ``p_value = min(1, 2 * (1 + min(#{d* <= 0}, #{d* >= 0})) / (B + 1))``, i.e.
      twice the smaller tail mass at zero, the p-value obtained by inverting the
      percentile interval, with the add-one correction so that a finite number
      of resamples never reports p = 0 (its floor is ``2 / (B + 1)``).

    References:
        Efron, B., Tibshirani, R. J. (1993). An Introduction to the Bootstrap,
        ch. 13 and 16. Chapman & Hall.
        Davison, A. C., Hinkley, D. V. (1997). Bootstrap Methods and their
        Application, ch. 4 (the (1 + count) / (B + 1) p-value). CUP.

    Args:
        a: Baseline scores, one per unit.
        b: Candidate scores, aligned with ``a``.
        resamples: Number of bootstrap resamples ``B``, >= 1.
        seed: Seed for ``random.Random``.
        confidence: Two-sided confidence level in (0, 1).

    Returns:
        The means, their difference, its interval and the p-value.

    Raises:
        ValueError: If the lengths differ, the inputs are empty or a parameter is
            out of range.
    """
    if len(a) != len(b):
        raise ValueError(
            f"paired_bootstrap_diff needs aligned pairs, got len(a)={len(a)} and "
            f"len(b)={len(b)}; pass one score per task for both systems, in the same order"
        )
    if len(a) == 0:
        raise ValueError("paired_bootstrap_diff needs at least one pair, got empty sequences")
    _check_confidence(confidence)
    _check_resamples(resamples)
    n = len(a)
    mean_a = sum(a) / n
    mean_b = sum(b) / n
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    means = _resampled_means(diffs, resamples, seed)
    alpha = 1.0 - confidence
    at_or_below = sum(1 for m in means if m <= 0.0)
    at_or_above = sum(1 for m in means if m >= 0.0)
    p_value = min(1.0, 2.0 * (1 + min(at_or_below, at_or_above)) / (resamples + 1))
    return PairedDiff(
        mean_a=mean_a,
        mean_b=mean_b,
        diff=mean_b - mean_a,
        ci_low=_percentile_sorted(means, 100.0 * alpha / 2.0),
        ci_high=_percentile_sorted(means, 100.0 * (1.0 - alpha / 2.0)),
        p_value=p_value,
    )


# --------------------------------------------------------------------------- paired tests


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs of two systems.

    ``b`` counts tasks system A passed and B failed, ``c`` the reverse.
    Under the null of equal success probability each discordant pair is a fair
    coin, so with ``n = b + c``::

        p = min(1, 2 * sum_{i=0}^{min(b, c)} C(n, i) / 2**n)

    computed in exact integer arithmetic. ``b == c == 0`` gives 1.0. The exact
    test is conservative; it is the safe choice for the small discordant counts
    typical of agent benchmarks.

    References:
        McNemar, Q. (1947). Note on the sampling error of the difference between
        correlated proportions or percentages. Psychometrika 12(2), 153-157.
        Fagerland, M. W., Lydersen, S., Laake, P. (2013). The McNemar test for
        binary matched-pairs data. BMC Medical Research Methodology 13, 91.

    Args:
        b: Pairs where A passed and B failed, >= 0.
        c: Pairs where A failed and B passed, >= 0.

    Returns:
        The two-sided p-value in (0, 1].

    Raises:
        ValueError: If a count is negative.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b!r}, c={c!r}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / (1 << n))


# --------------------------------------------------------------------------- order statistics


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile with linear interpolation (numpy's default).

    With ``x`` the sorted values and ``h = (len(x) - 1) * q / 100``::

        percentile = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])

    This is definition 7 of Hyndman & Fan, the default of ``numpy.percentile``
    (``method="linear"``) and of R's ``quantile``.

    References:
        Hyndman, R. J., Fan, Y. (1996). Sample quantiles in statistical
        packages. The American Statistician 50(4), 361-365.

    Args:
        values: The sample, in any order.
        q: Percentile in [0, 100].

    Returns:
        The percentile, or ``None`` when ``values`` is empty.

    Raises:
        ValueError: If ``q`` is outside [0, 100] or a value is NaN.
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be a percentile in [0, 100], got {q!r}")
    if len(values) == 0:
        return None
    if any(math.isnan(v) for v in values):
        raise ValueError("percentile got a NaN value; drop or replace NaNs first")
    return float(_percentile_sorted(sorted(values), q))


def median(values: Sequence[float]) -> float | None:
    """The 50th :func:`percentile`; ``None`` when ``values`` is empty."""
    return percentile(values, 50.0)


def p95(values: Sequence[float]) -> float | None:
    """The 95th :func:`percentile` (e.g. of latencies); ``None`` when empty."""
    return percentile(values, 95.0)
