"""Tests for toolproof.metrics.stats against values worked out by hand.

Throughout, z = NormalDist().inv_cdf(0.975) = 1.959964, so z**2 = 3.841459.
"""

from __future__ import annotations

import math

import pytest

import toolproof.metrics as metrics
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

# ---------------------------------------------------------------- Wilson / proportion


def test_wilson_8_of_10() -> None:
    # p = 0.8, n = 10, z**2 / n = 0.384146, denom = 1.384146
    # centre = (0.8 + 0.192073) / 1.384146 = 0.716740
    # half   = 1.959964 / 1.384146 * sqrt(0.016 + 0.00960365)
    #        = 1.416009 * 0.160011 = 0.226578
    # interval = (0.490162, 0.943318)
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=5e-5)
    assert high == pytest.approx(0.9433, abs=5e-5)


def test_wilson_all_failures_and_all_successes() -> None:
    # 0/10: low is exactly 0; high = (z**2/n) / (1 + z**2/n) = z**2 / (n + z**2)
    #     = 3.841459 / 13.841459 = 0.277533
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.277533, abs=1e-6)
    # 10/10 mirrors it: (1 - 0.277533, 1) = (0.722467, 1.0)
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.722467, abs=1e-6)
    assert high == 1.0


def test_wilson_n_zero_is_uninformative() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_other_confidence() -> None:
    # 90%: z = inv_cdf(0.95) = 1.644854, z**2 = 2.705543; 5/10: p = 0.5
    # centre = (0.5 + 0.135277) / 1.270554 = 0.5 (symmetric)
    # half = 1.644854 / 1.270554 * sqrt(0.025 + 0.00676386) = 1.294596 * 0.178224 = 0.230728
    low, high = wilson_interval(5, 10, confidence=0.90)
    assert low == pytest.approx(0.269272, abs=1e-6)
    assert high == pytest.approx(0.730728, abs=1e-6)


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [(11, 10, 0.95), (-1, 10, 0.95), (0, -1, 0.95), (5, 10, 0.0), (5, 10, 1.0), (5, 10, 95)],
)
def test_wilson_rejects_bad_input(successes: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError, match=r"must be"):
        wilson_interval(successes, n, confidence)


def test_proportion_carries_rate_and_interval() -> None:
    prop = proportion(8, 10)
    assert prop.rate == 0.8
    assert (prop.ci_low, prop.ci_high) == wilson_interval(8, 10)
    assert not prop.empty
    assert prop.to_dict() == {
        "successes": 8,
        "n": 10,
        "rate": 0.8,
        "ci_low": prop.ci_low,
        "ci_high": prop.ci_high,
        "empty": False,
    }


def test_proportion_n_zero_is_flagged_not_confused_with_all_failed() -> None:
    none = proportion(0, 0)
    assert none == Proportion(successes=0, n=0, rate=0.0, ci_low=0.0, ci_high=1.0)
    assert none.empty
    assert none.to_dict()["empty"] is True
    all_failed = proportion(0, 4)
    assert all_failed.rate == 0.0
    assert not all_failed.empty


# ---------------------------------------------------------------- pass@k / pass^k

# Three made-up tasks, 5 attempts each; C(5, 2) = 10, C(5, 3) = 10.
TABLE = {"never": (5, 0), "sometimes": (5, 2), "always": (5, 5)}


def test_pass_at_k_per_task() -> None:
    # 1 - C(n-c, k) / C(n, k)
    assert pass_at_k(5, 0, 2) == 0.0  # 1 - C(5,2)/C(5,2) = 1 - 10/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/10 = 1 - 3/10
    assert pass_at_k(5, 5, 2) == 1.0  # 1 - C(0,2)/10 = 1 - 0
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)  # 1 - C(3,3)/C(5,3) = 1 - 1/10


def test_pass_hat_k_per_task() -> None:
    # C(c, k) / C(n, k)
    assert pass_hat_k(5, 0, 2) == 0.0  # C(0,2)/10 = 0
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)  # C(2,2)/10 = 1/10
    assert pass_hat_k(5, 5, 2) == 1.0  # C(5,2)/10 = 10/10
    assert pass_hat_k(5, 2, 3) == 0.0  # C(2,3) = 0: only 2 passes, 3 needed


def test_mean_pass_at_k_and_pass_hat_k_over_tasks() -> None:
    # pass@2 = (0 + 0.7 + 1) / 3 = 1.7 / 3 = 0.566667
    assert mean_pass_at_k(TABLE, 2) == pytest.approx(1.7 / 3)
    # pass^2 = (0 + 0.1 + 1) / 3 = 1.1 / 3 = 0.366667
    assert mean_pass_hat_k(TABLE, 2) == pytest.approx(1.1 / 3)


def test_k_equal_n() -> None:
    # k = n: pass@n is 1 iff any attempt passed, pass^n is 1 iff all passed.
    assert mean_pass_at_k(TABLE, 5) == pytest.approx(2 / 3)  # (0 + 1 + 1) / 3
    assert mean_pass_hat_k(TABLE, 5) == pytest.approx(1 / 3)  # (0 + 0 + 1) / 3


def test_k_one_is_the_plain_success_rate() -> None:
    for n in range(1, 16):
        for c in range(n + 1):
            assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-15)
            assert pass_hat_k(n, c, 1) == c / n


def test_pass_at_k_rises_and_pass_hat_k_falls_with_k() -> None:
    for n in range(1, 11):
        for c in range(n + 1):
            at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
            hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
            assert at == sorted(at)
            assert hat == sorted(hat, reverse=True)
            assert all(h <= a + 1e-15 for h, a in zip(hat, at, strict=True))


def test_large_n_has_no_overflow() -> None:
    # Exact integer binomials: C(1000, 500) has 300 digits. 1 of 1000 passing, k = 1000.
    assert pass_at_k(1000, 1, 1000) == 1.0
    assert pass_hat_k(1000, 999, 1000) == 0.0
    assert pass_at_k(1000, 500, 500) == pytest.approx(1.0)


def test_k_greater_than_n_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"k=6 exceeds n=5 attempts.*run >= 6 attempts"):
        pass_at_k(5, 2, 6)
    with pytest.raises(ValueError, match=r"k=6 exceeds n=5"):
        pass_hat_k(5, 2, 6)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 2, 0), (-1, 0, 1)])
def test_pass_k_rejects_bad_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match=r"must be"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match=r"must be"):
        pass_hat_k(n, c, k)


def test_mean_pass_k_names_the_bad_task() -> None:
    table = {"ok": (5, 1), "short": (2, 1)}
    with pytest.raises(ValueError, match=r"task 'short' \(n=2, c=1\): k=3 exceeds n=2"):
        mean_pass_at_k(table, 3)
    with pytest.raises(ValueError, match=r"mean_pass_hat_k: task 'short'"):
        mean_pass_hat_k(table, 3)


def test_mean_pass_k_rejects_empty_table() -> None:
    with pytest.raises(ValueError, match=r"at least one task"):
        mean_pass_at_k({}, 1)
    with pytest.raises(ValueError, match=r"at least one task"):
        mean_pass_hat_k({}, 1)


# ---------------------------------------------------------------- McNemar


def test_mcnemar_b1_c8() -> None:
    # n = 9, tail = (C(9,0) + C(9,1)) / 2**9 = (1 + 9) / 512 = 0.01953125; p = 2 * tail
    assert mcnemar_exact(1, 8) == pytest.approx(0.0391, abs=5e-5)
    assert mcnemar_exact(1, 8) == 0.0390625
    assert mcnemar_exact(8, 1) == 0.0390625  # symmetric


def test_mcnemar_more_values() -> None:
    # b=0, c=5: 2 * C(5,0) / 2**5 = 2 / 32 = 0.0625
    assert mcnemar_exact(0, 5) == 0.0625
    # b=2, c=10: n=12, 2 * (1 + 12 + 66) / 4096 = 158 / 4096 = 0.03857421875
    assert mcnemar_exact(2, 10) == 0.03857421875
    # b=c=5: 2 * (1 + 10 + 45 + 120 + 210 + 252) / 1024 = 1276 / 1024 > 1, capped
    assert mcnemar_exact(5, 5) == 1.0


def test_mcnemar_no_discordant_pairs() -> None:
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_large_counts() -> None:
    # 2**2000 does not fit a float; exact integer arithmetic still gives a tiny p.
    p = mcnemar_exact(0, 2000)
    assert 0.0 <= p < 1e-300


def test_mcnemar_rejects_negative() -> None:
    with pytest.raises(ValueError, match=r"b=-1, c=3"):
        mcnemar_exact(-1, 3)


# ---------------------------------------------------------------- percentiles


def test_percentile_linear_interpolation() -> None:
    # numpy "linear": h = (len - 1) * q / 100, x[floor h] + frac(h) * (x[floor h + 1] - x[floor h])
    data = [1.0, 2.0, 3.0, 4.0]
    assert percentile(data, 50) == 2.5  # h = 1.5 -> 2 + 0.5 * 1
    assert percentile(data, 25) == 1.75  # h = 0.75 -> 1 + 0.75 * 1
    assert percentile(data, 95) == pytest.approx(3.85)  # h = 2.85 -> 3 + 0.85 * 1
    unsorted = [40, 15, 50, 20, 35]  # sorted: 15, 20, 35, 40, 50
    assert percentile(unsorted, 30) == pytest.approx(23.0)  # h = 1.2 -> 20 + 0.2 * 15
    assert percentile(unsorted, 95) == pytest.approx(48.0)  # h = 3.8 -> 40 + 0.8 * 10
    assert percentile(unsorted, 0) == 15.0
    assert percentile(unsorted, 100) == 50.0
    assert percentile([7.0], 33) == 7.0


def test_median_and_p95() -> None:
    assert median([3, 1, 2]) == 2.0  # h = 1 -> middle value
    assert median([4, 1, 3, 2]) == 2.5
    assert p95([1.0, 2.0, 3.0, 4.0]) == pytest.approx(3.85)


def test_percentile_empty_is_none() -> None:
    assert percentile([], 50) is None
    assert median([]) is None
    assert p95([]) is None


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"\[0, 100\], got 101"):
        percentile([1.0], 101)
    with pytest.raises(ValueError, match=r"\[0, 100\], got -1"):
        percentile([1.0], -1)
    with pytest.raises(ValueError, match=r"NaN"):
        percentile([1.0, math.nan], 50)


# ---------------------------------------------------------------- bootstrap


NOISY = [0.0, 0.25, 1.0, 0.5, 0.75, 1.0, 0.0, 0.4, 0.9, 0.6, 0.1, 1.0, 0.3, 0.8]


def test_bootstrap_is_deterministic_given_seed() -> None:
    first = bootstrap_mean_ci(NOISY, seed=7)
    assert bootstrap_mean_ci(NOISY, seed=7) == first
    assert bootstrap_mean_ci(NOISY, seed=8) != first


def test_bootstrap_brackets_the_mean() -> None:
    mean = sum(NOISY) / len(NOISY)
    low, high = bootstrap_mean_ci(NOISY)
    assert 0.0 <= low < mean < high <= 1.0
    narrower = bootstrap_mean_ci(NOISY, confidence=0.5)
    assert low <= narrower[0] < narrower[1] <= high


def test_bootstrap_two_points() -> None:
    # Resample means of [0, 1] are 0, 0.5, 1 with probability 1/4, 1/2, 1/4. Of 2000,
    # about 500 are 0 and 500 are 1; the 2.5% and 97.5% points (h = 49.975 and
    # 1949.025 in the sorted means) lie deep inside those runs, so the CI is (0, 1).
    assert bootstrap_mean_ci([0.0, 1.0]) == (0.0, 1.0)


def test_bootstrap_degenerate_samples() -> None:
    assert bootstrap_mean_ci([0.5]) == (0.5, 0.5)
    assert bootstrap_mean_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"empty"):
        bootstrap_mean_ci([])
    with pytest.raises(ValueError, match=r"resamples must be >= 1, got 0"):
        bootstrap_mean_ci([1.0], resamples=0)
    with pytest.raises(ValueError, match=r"confidence"):
        bootstrap_mean_ci([1.0], confidence=1.5)


def test_paired_identical_systems() -> None:
    # Every paired difference is 0, so every resample mean is 0:
    # CI (0, 0); #{d* <= 0} = #{d* >= 0} = B, p = min(1, 2 (1 + B) / (B + 1)) = 1.
    result = paired_bootstrap_diff(NOISY, NOISY)
    assert result == PairedDiff(
        mean_a=result.mean_a, mean_b=result.mean_a, diff=0.0, ci_low=0.0, ci_high=0.0, p_value=1.0
    )


def test_paired_constant_improvement() -> None:
    # b = a + 1 everywhere: every d* = 1, CI (1, 1); #{d* <= 0} = 0, so
    # p = 2 (1 + 0) / (B + 1) = 2 / 2001, the smallest p 2000 resamples can give.
    a = [0.0, 0.0, 0.0, 0.0]
    b = [1.0, 1.0, 1.0, 1.0]
    result = paired_bootstrap_diff(a, b)
    assert (result.mean_a, result.mean_b, result.diff) == (0.0, 1.0, 1.0)
    assert (result.ci_low, result.ci_high) == (1.0, 1.0)
    assert result.p_value == pytest.approx(2 / 2001)
    assert result.to_dict() == {
        "mean_a": 0.0,
        "mean_b": 1.0,
        "diff": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.0,
        "p_value": result.p_value,
    }


def test_paired_is_deterministic_and_antisymmetric() -> None:
    a = NOISY
    b = [min(1.0, x + 0.2) for x in NOISY[::-1]]
    forward = paired_bootstrap_diff(a, b, seed=3)
    assert paired_bootstrap_diff(a, b, seed=3) == forward
    assert forward.diff == pytest.approx(forward.mean_b - forward.mean_a)
    assert forward.ci_low <= forward.diff <= forward.ci_high
    assert 0.0 < forward.p_value <= 1.0
    # Swapping the systems negates every resampled difference (same indices, same seed).
    backward = paired_bootstrap_diff(b, a, seed=3)
    assert backward.diff == pytest.approx(-forward.diff)
    assert backward.ci_low == pytest.approx(-forward.ci_high)
    assert backward.ci_high == pytest.approx(-forward.ci_low)
    assert backward.p_value == forward.p_value


def test_paired_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"len\(a\)=2 and len\(b\)=3"):
        paired_bootstrap_diff([0.0, 1.0], [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"at least one pair"):
        paired_bootstrap_diff([], [])
    with pytest.raises(ValueError, match=r"resamples"):
        paired_bootstrap_diff([1.0], [1.0], resamples=0)


# ---------------------------------------------------------------- package surface


def test_package_reexports_the_stats_api() -> None:
    assert metrics.__all__ == sorted(metrics.__all__)
    assert set(metrics.__all__) >= {
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
    }
