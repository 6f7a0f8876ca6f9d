"""The quantile sketch: exact while small, within its accuracy when large, mergeable."""

from __future__ import annotations

import random

import pytest

from toolproof.metrics.sketch import QuantileSketch
from toolproof.metrics.stats import percentile


def _sample(n: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    # latencies spread over 4 orders of magnitude, some zeros and negatives (a clock step)
    values = [rng.lognormvariate(-2.0, 1.5) for _ in range(n)]
    values += [0.0] * (n // 50) + [-rng.random() for _ in range(n // 100)]
    rng.shuffle(values)
    return values


@pytest.mark.parametrize("q", [0.0, 5.0, 50.0, 95.0, 99.0, 100.0])
def test_small_samples_are_exact(q: float) -> None:
    values = _sample(1000)
    sketch = QuantileSketch()
    sketch.extend(values)
    assert sketch.exact and sketch.quantile(q) == percentile(values, q)


@pytest.mark.parametrize("q", [1.0, 10.0, 50.0, 90.0, 95.0, 99.0])
def test_large_samples_are_within_the_relative_accuracy(q: float) -> None:
    values = _sample(60_000)
    sketch = QuantileSketch(alpha=0.005)
    sketch.extend(values)
    assert not sketch.exact
    exact = percentile(values, q)
    assert exact is not None
    got = sketch.quantile(q)
    assert got is not None
    assert abs(got - exact) <= 0.005 * abs(exact) + 1e-12
    assert sketch.buckets() < 4000  # bounded by the spread of the values, not their count
    assert sketch.summary()["n"] == len(values)


def test_memory_does_not_grow_with_the_count() -> None:
    rng = random.Random(4)
    small, big = QuantileSketch(exact_limit=100), QuantileSketch(exact_limit=100)
    small.extend(rng.uniform(0.1, 0.5) for _ in range(5_000))  # agent latency, 100-500 ms
    big.extend(rng.uniform(0.1, 0.5) for _ in range(200_000))
    assert big.buckets() <= small.buckets() + 2 <= 170  # log(5) / log(gamma) buckets


def test_merging_gives_what_one_sketch_of_everything_gives_in_any_order() -> None:
    values = _sample(9000)
    whole = QuantileSketch()
    whole.extend(values)
    parts = [QuantileSketch() for _ in range(3)]
    for i, v in enumerate(values):
        parts[i % 3].add(v)
    merged = QuantileSketch()
    for part in reversed(parts):
        merged.merge(part)
    backwards = QuantileSketch()
    backwards.extend(reversed(values))
    for q in (5.0, 50.0, 95.0):
        assert merged.quantile(q) == whole.quantile(q) == backwards.quantile(q)
    assert merged.n == whole.n


def test_small_merges_stay_exact() -> None:
    a, b = QuantileSketch(), QuantileSketch()
    a.extend([3.0, 1.0])
    b.extend([2.0])
    a.merge(b)
    assert a.exact and a.quantile(50.0) == 2.0


def test_hostile_values_are_left_out_not_fatal() -> None:
    sketch = QuantileSketch()
    sketch.extend([1.0, float("nan"), float("inf"), -float("inf"), 3.0])
    assert sketch.summary() == {"n": 2, "mean": 2.0, "median": 2.0, "p95": 2.9}
    assert sketch.skipped == 3
    with pytest.raises(ValueError, match="q must be a percentile"):
        sketch.quantile(101.0)
    with pytest.raises(ValueError, match="alpha"):
        QuantileSketch(alpha=1.5)
    assert QuantileSketch().summary() == {"n": 0, "mean": None, "median": None, "p95": None}
    with pytest.raises(ValueError, match="different accuracy"):
        QuantileSketch(alpha=0.01).merge(QuantileSketch(alpha=0.02))
