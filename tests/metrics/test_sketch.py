"""The quantile sketch: exact while small, within its accuracy when large, mergeable."""

from __future__ import annotations

import math
import random
import tracemalloc

import pytest

from toolproof.metrics.sketch import MAX_BUCKETS, QuantileSketch
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


def _dict_quantile(values: list[float], q: float, alpha: float = 0.005) -> float:
    """What the sketch answered when its buckets were a dict (index -> count), for values > 0."""
    log_gamma = math.log((1 + alpha) / (1 - alpha))
    gamma = math.exp(log_gamma)
    counts: dict[int, int] = {}
    for v in values:
        i = math.ceil(math.log(v) / log_gamma)
        counts[i] = counts.get(i, 0) + 1
    ranks = [i for i in sorted(counts) for _ in range(counts[i])]
    h = (len(values) - 1) * q / 100.0
    low = math.floor(h)

    def value(i: int) -> float:
        return 2.0 * gamma ** ranks[i] / (gamma + 1.0)

    out = value(low)
    return out + (h - low) * (value(low + 1) - out) if h > low else out


def test_the_dense_buckets_answer_what_the_dict_of_buckets_did() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(-4.0, 2.0) for _ in range(5_000)]
    sketch = QuantileSketch(exact_limit=10)
    sketch.extend(values)
    for q in (0.0, 1.0, 50.0, 95.0, 99.9, 100.0):
        assert sketch.quantile(q) == pytest.approx(_dict_quantile(values, q), rel=1e-12)


def test_a_run_of_sketches_holds_8_bytes_a_bucket_not_a_dict_entry() -> None:
    # Sketches of latencies over 5 orders of magnitude (a run's metrics by breakdown group),
    # about 1,000 buckets each: as dicts they held about 100 KB each.
    rng = random.Random(3)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sketches = [QuantileSketch(exact_limit=16) for _ in range(20)]
        for sketch in sketches:
            sketch.extend(10 ** rng.uniform(-6.0, -1.0) for _ in range(2_000))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert min(s.buckets() for s in sketches) > 900
    assert held < 20 * 20_000  # under 20 KB a sketch


def test_values_over_hundreds_of_orders_of_magnitude_stay_bounded() -> None:
    # A hostile spread (an agent's reported cost, say): the span folds its smallest
    # magnitudes; the count, the mean and the high percentiles are kept.
    values = [10.0**k for k in range(-300, 301)] + [-(10.0**k) for k in range(300, -301, -7)]
    forward, backward = QuantileSketch(exact_limit=10), QuantileSketch(exact_limit=10)
    forward.extend(values)
    backward.extend(reversed(values))
    assert forward.n == len(values)
    assert len(forward._pos.counts) <= MAX_BUCKETS and len(forward._neg.counts) <= MAX_BUCKETS
    top = forward.quantile(100.0)
    assert top is not None and abs(top - 1e300) <= 0.005 * 1e300
    bottom = forward.quantile(0.0)
    assert bottom is not None and abs(bottom + 1e300) <= 0.005 * 1e300
    for q in (0.0, 10.0, 50.0, 90.0, 99.0, 100.0):  # folding does not depend on the order
        assert forward.quantile(q) == backward.quantile(q)
    merged = QuantileSketch(exact_limit=10)
    half = len(values) // 2
    first, second = QuantileSketch(exact_limit=10), QuantileSketch(exact_limit=10)
    first.extend(values[:half])
    second.extend(values[half:])
    merged.merge(second)
    merged.merge(first)
    assert [merged.quantile(q) for q in (5.0, 50.0, 95.0)] == [
        forward.quantile(q) for q in (5.0, 50.0, 95.0)
    ]


def _state(sketch: QuantileSketch) -> tuple[object, ...]:
    exact = None if sketch._exact is None else list(sketch._exact)
    buckets = [(b.offset, list(b.counts)) for b in (sketch._pos, sketch._neg)]
    return sketch.n, sketch.total, sketch.skipped, sketch._zeros, exact, buckets


@pytest.mark.parametrize(
    "values",
    [
        _sample(100),
        _sample(5000),  # crosses the exact limit inside one extend
        [1.0, math.nan, -math.inf, 0.0, -0.0, 2, True, math.inf, 1e-300, -1e300] * 300,
        [10.0**e for e in range(-300, 300, 7)] * 30,  # a hostile spread: the buckets fold
        [],
    ],
)
@pytest.mark.parametrize("chunk", [1, 7, 256, 100_000])
def test_extend_gives_exactly_the_state_of_adding_one_by_one(
    values: list[float], chunk: int
) -> None:
    one, bulk = QuantileSketch(), QuantileSketch()
    for value in values:
        one.add(value)
    for start in range(0, len(values), chunk):
        bulk.extend(values[start : start + chunk])
    assert _state(bulk) == _state(one)
    assert bulk.summary() == one.summary()


def test_the_mean_of_kept_values_does_not_depend_on_their_order() -> None:
    # Episodes finish in any order: a running float total can differ in its last bit and
    # flip a mean on a rounding tie; the kept values' exactly rounded sum cannot.
    values = [0.1, 0.2, 0.3, 1e-3, 2.5, 1.1, 0.7] * 40
    means = set()
    for shift in range(7):
        sketch = QuantileSketch()
        for value in values[shift:] + values[:shift]:
            sketch.add(value)
        means.add(sketch.summary(rounding=17)["mean"])
    assert len(means) == 1


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 5000])
def test_the_summary_gives_the_sketchs_own_median_and_p95(n: int) -> None:
    """summary() sorts exact values once for both statistics: the same as quantile()."""
    sketch = QuantileSketch()
    sketch.extend(_sample(n, seed=n))
    summary = sketch.summary(rounding=12)
    for key, q in (("median", 50.0), ("p95", 95.0)):
        value = sketch.quantile(q)
        assert summary[key] == (None if value is None else round(value, 12))
