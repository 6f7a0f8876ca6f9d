"""The bootstrap's draws made in C and kept between groups give the very figures of the
Python loop they replaced (``metrics/stats._resampled_means``), bit for bit.

``_the_old_way`` is the function as it was before (``random.Random(seed).choices`` per
resample, summed in order): every resample, every mean and so every interval and p-value
must be the same floats, whatever the values (fractions of epochs, ints, ``-0.0``), the
size (cached draws or, past the cache, the old loop) and whether the draws of that size
were already made for another group.
"""

from __future__ import annotations

import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.metrics.stats import (
    _CACHED_DRAWS,
    _percentile_sorted,
    _resampled_means,
    bootstrap_mean_ci,
    paired_bootstrap_diff,
)

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "40"))


def _the_old_way(values: list[float], resamples: int, seed: int) -> list[float]:
    n = len(values)
    rng = random.Random(seed)
    means = [sum(rng.choices(values, k=n)) / n for _ in range(resamples)]
    means.sort()
    return means


_task_means = st.lists(
    st.one_of(
        st.integers(0, 5).map(lambda c: c / 5),  # epochs 5
        st.integers(0, 3).map(lambda c: c / 3),  # epochs 3: not exact in binary
        st.sampled_from([0.0, -0.0, 1.0, 1, 0]),
        st.floats(-1e6, 1e6, allow_nan=False),
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(
    values=_task_means,
    resamples=st.sampled_from([1, 7, 200, 2000]),
    seed=st.sampled_from([0, 1, 12345, 2**40 + 3]),
)
def test_the_means_are_those_of_the_old_loop(
    values: list[float], resamples: int, seed: int
) -> None:
    old = _the_old_way(values, resamples, seed)
    assert _resampled_means(values, resamples, seed) == old
    # again: the draws of this size are kept now, and a tuple is a sequence too
    assert _resampled_means(tuple(values), resamples, seed) == old


def test_groups_of_equal_size_share_draws_but_not_values() -> None:
    rng = random.Random(5)
    for n in (10, 37, 100):
        first = [rng.randrange(4) / 3 for _ in range(n)]
        second = [rng.randrange(6) / 5 for _ in range(n)]
        for values in (first, second, first):
            assert _resampled_means(values, 2000, 0) == _the_old_way(values, 2000, 0)


def test_past_the_cache_the_old_loop_runs() -> None:
    values = [i % 7 / 7 for i in range(_CACHED_DRAWS // 100 + 1)]
    assert len(values) * 100 > _CACHED_DRAWS
    assert _resampled_means(values, 100, 3) == _the_old_way(values, 100, 3)


def test_intervals_and_paired_diffs_are_unchanged_for_seeded_inputs() -> None:
    rng = random.Random(11)
    for n in (3, 10, 100, 150):
        a = [rng.randrange(4) / 3 for _ in range(n)]
        b = [rng.randrange(4) / 3 for _ in range(n)]
        old = _the_old_way(a, 2000, 0)
        expected = (_percentile_sorted(old, 2.5), _percentile_sorted(old, 97.5))
        assert bootstrap_mean_ci(a, resamples=2000, seed=0) == expected
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        old_diffs = _the_old_way(diffs, 2000, 7)
        paired = paired_bootstrap_diff(a, b, resamples=2000, seed=7)
        assert (paired.ci_low, paired.ci_high) == (
            _percentile_sorted(old_diffs, 2.5),
            _percentile_sorted(old_diffs, 97.5),
        )
