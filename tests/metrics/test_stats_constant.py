"""The bootstrap of identical values (a one-task run) skips the draws, with the same result.

Every with-replacement resample of a sample whose values are all the same number is that
sample, so ``_resampled_means`` computes the one mean instead of drawing; these tests hold
it to the long way bit for bit, and show that nearly identical samples (``0.0`` and
``-0.0``, ``1`` and ``1.0``, NaN) still take the long way.
"""

from __future__ import annotations

import math
import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.metrics.stats import _resampled_means, bootstrap_mean_ci

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))


def _the_long_way(values: list[float], resamples: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    n = len(values)
    return sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(
    value=st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**70), 2**70)),
    n=st.integers(1, 40),
    seed=st.integers(0, 2**32),
)
def test_identical_values_give_the_resampled_result(value: float, n: int, seed: int) -> None:
    values = [value] * n
    assert _resampled_means(values, 50, seed) == _the_long_way(values, 50, seed)
    low, high = bootstrap_mean_ci(values, resamples=50, seed=seed)
    mean = sum(values) / n
    if math.isfinite(mean):  # an overflowing sum interpolates to NaN either way
        assert low == high == mean


def test_nearly_identical_values_still_resample() -> None:
    samples: list[list[float]] = [
        [0.0, -0.0, 0.0],
        [1, 1.0, 1],
        [2**60, float(2**60)],
        [float("nan")] * 3,
    ]
    for values in samples:
        got, want = _resampled_means(values, 30, 7), _the_long_way(values, 30, 7)
        assert [repr(x) for x in got] == [repr(x) for x in want]
