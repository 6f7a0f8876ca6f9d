"""A mergeable quantile sketch: exact for small samples, bounded memory for large ones.

:class:`QuantileSketch` keeps its values exactly up to ``exact_limit`` (so every run of
a few thousand episodes reports the same percentiles as before), then folds them into
logarithmic buckets with relative accuracy ``alpha`` (the DDSketch construction:
bucket ``i`` holds values in ``(gamma^(i-1), gamma^i]``, ``gamma = (1 + alpha) /
(1 - alpha)``), so memory is bounded by the spread of the values, not their number:
about 1,400 buckets cover 1 microsecond to a day at 1%. Zero and negative values
have their own counter and mirrored buckets.

The buckets are one dense array of counts per sign (:class:`_Buckets`, 8 bytes a
bucket from the lowest to the highest index seen), not a dict (about 100 bytes a
bucket, its key an int object): a run's few hundred sketches (one per metric and
breakdown group) filled in their buckets as a run grew, and that was most of a 50,000-episode
run's growth in memory. A span wider than :data:`MAX_BUCKETS` (values over some 40 orders of
magnitude: hostile, never timings) folds its smallest magnitudes into one bucket, as
DDSketch's collapsing store does: memory stays bounded, the high percentiles exact to alpha.

Two sketches merge by adding counts (:meth:`merge`), and the result does not depend on
the order the values came in: a run's summary is the same whatever order its episodes
finished in, and whether workers counted them apart and merged.

Reference:
    Masson, C., Rim, J. E., Lee, H. K. (2019). DDSketch: A fast and fully-mergeable
    quantile sketch with relative-error guarantees. PVLDB 12(12), 2195-2205.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from .stats import _percentile_sorted, percentile

EXACT_LIMIT = 2048
"""Values kept exactly before a sketch switches to buckets."""
ALPHA = 0.005
"""Relative accuracy of a bucketed percentile (0.5%)."""
MAX_BUCKETS = 8192
"""Widest span of bucket indices per sign (64 KB); wider spans fold their lowest magnitudes."""


class _Buckets:
    """Counts of consecutive bucket indices ``offset .. offset + len(counts) - 1``."""

    __slots__ = ("counts", "offset")

    def __init__(self) -> None:
        self.offset = 0
        self.counts: array[int] = array("q")

    def add(self, index: int, count: int = 1) -> None:
        counts = self.counts
        if not counts:
            self.offset = index
            counts.append(count)
            return
        at = index - self.offset
        if at < 0:  # a new lowest index: shift the counts up
            grown = array("q", bytes(8 * -at))
            grown.extend(counts)
            self.counts = counts = grown
            self.offset = index
            at = 0
        elif at >= len(counts):
            counts.extend(array("q", bytes(8 * (at - len(counts) + 1))))
        counts[at] += count
        if len(counts) > MAX_BUCKETS:
            self._fold()

    def add_all(self, indices: Iterable[int]) -> None:
        """:meth:`add` each index once, in order (the common case, an index inside the
        span, without a method call)."""
        counts, offset = self.counts, self.offset
        for index in indices:
            at = index - offset
            if counts and 0 <= at < len(counts):
                counts[at] += 1
                continue
            self.add(index)
            counts, offset = self.counts, self.offset

    def _fold(self) -> None:
        """Fold the lowest indices into the lowest kept one (the span back to the maximum)."""
        counts = self.counts
        cut = len(counts) - MAX_BUCKETS
        folded = sum(counts[: cut + 1])
        kept = counts[cut:]
        kept[0] = folded
        self.counts = kept
        self.offset += cut

    def merge(self, other: _Buckets) -> None:
        for at, count in enumerate(other.counts):
            if count:
                self.add(other.offset + at, count)

    def items(self, *, descending: bool = False) -> Iterator[tuple[int, int]]:
        """``(index, count)`` of the buckets in use, by index."""
        counts, offset = self.counts, self.offset
        order = range(len(counts) - 1, -1, -1) if descending else range(len(counts))
        for at in order:
            if counts[at]:
                yield offset + at, counts[at]

    def used(self) -> int:
        return len(self.counts) - self.counts.count(0)


class QuantileSketch:
    """Count, sum, and percentiles of a stream of finite floats in bounded memory."""

    __slots__ = (
        "_exact",
        "_gamma",
        "_log_gamma",
        "_neg",
        "_pos",
        "_zeros",
        "limit",
        "n",
        "skipped",
        "total",
    )

    def __init__(self, *, exact_limit: int = EXACT_LIMIT, alpha: float = ALPHA) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        self.limit = exact_limit
        self._gamma = (1.0 + alpha) / (1.0 - alpha)
        self._log_gamma = math.log(self._gamma)
        self._exact: array[float] | None = array("d")  # 8 bytes a value, not a float object
        self._pos = _Buckets()
        self._neg = _Buckets()
        self._zeros = 0
        self.n = 0
        self.total = 0.0
        self.skipped = 0
        """Values left out: NaN or infinite."""

    @property
    def exact(self) -> bool:
        """Whether every value is still kept (percentiles are exact)."""
        return self._exact is not None

    def add(self, value: float) -> None:
        """Count one value; a NaN or infinity (say, a cost an agent reported) is only
        counted in :attr:`skipped`: it has no place in a mean or a percentile."""
        if not math.isfinite(value):
            self.skipped += 1
            return
        self.n += 1
        self.total += value
        if self._exact is not None:
            self._exact.append(value)
            if len(self._exact) > self.limit:
                values, self._exact = self._exact, None
                for v in values:
                    self._bucket(v)
            return
        self._bucket(value)

    def extend(self, values: Iterable[float]) -> None:
        """Count each value, in order: the same state as :meth:`add` one after the other
        (the same sum, in the same order), in a fraction of the time."""
        isfinite = math.isfinite
        total = self.total
        kept: list[float] = []
        keep = kept.append
        for value in values:
            if isfinite(value):
                total += value
                keep(value)
            else:
                self.skipped += 1
        if not kept:
            return
        self.n += len(kept)
        self.total = total
        exact = self._exact
        if exact is not None:
            exact.extend(kept)
            if len(exact) <= self.limit:
                return
            self._exact = None
            kept = list(exact)
        log, ceil, lg = math.log, math.ceil, self._log_gamma
        self._pos.add_all(ceil(log(v) / lg) for v in kept if v > 0.0)
        self._neg.add_all(ceil(log(-v) / lg) for v in kept if v < 0.0)
        self._zeros += sum(1 for v in kept if v == 0.0)

    def _index(self, magnitude: float) -> int:
        return math.ceil(math.log(magnitude) / self._log_gamma)

    def _bucket(self, value: float) -> None:
        if value > 0.0:
            self._pos.add(self._index(value))
        elif value < 0.0:
            self._neg.add(self._index(-value))
        else:
            self._zeros += 1

    def merge(self, other: QuantileSketch) -> None:
        """Add another sketch's values (same ``alpha``) to this one."""
        if other._gamma != self._gamma:
            raise ValueError("sketches of different accuracy cannot be merged")
        if (
            self._exact is not None
            and other._exact is not None
            and len(self._exact) + len(other._exact) <= self.limit
        ):
            self._exact.extend(other._exact)
            self.n += other.n
            self.total += other.total
            self.skipped += other.skipped
            return
        if self._exact is not None:
            values, self._exact = self._exact, None
            for v in values:
                self._bucket(v)
        if other._exact is not None:
            for v in other._exact:
                self._bucket(v)
        else:
            self._pos.merge(other._pos)
            self._neg.merge(other._neg)
            self._zeros += other._zeros
        self.n += other.n
        self.total += other.total
        self.skipped += other.skipped

    def _value(self, sign: int, index: int) -> float:
        """The bucket's representative: relative error at most alpha for its values."""
        return sign * 2.0 * self._gamma**index / (self._gamma + 1.0)

    def _at_rank(self, rank: int) -> float:
        """The value of the ``rank``-th smallest (0-based), to within the accuracy."""
        seen = 0
        for index, count in self._neg.items(descending=True):  # most negative first
            seen += count
            if rank < seen:
                return self._value(-1, index)
        seen += self._zeros
        if rank < seen:
            return 0.0
        for index, count in self._pos.items():
            seen += count
            if rank < seen:
                return self._value(1, index)
        raise IndexError(rank)  # pragma: no cover - rank < n always

    def quantile(self, q: float) -> float | None:
        """The ``q``-th percentile (``q`` in [0, 100]), linear between ranks; None when empty.

        Exact (numpy's default method) while :attr:`exact`; otherwise within ``alpha``
        relative error of the value at each neighbouring rank.
        """
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"q must be a percentile in [0, 100], got {q!r}")
        if self._exact is not None:
            return percentile(self._exact, q)
        h = (self.n - 1) * q / 100.0
        low = math.floor(h)
        value = self._at_rank(low)
        if h > low:
            value += (h - low) * (self._at_rank(low + 1) - value)
        return value

    def buckets(self) -> int:
        """How many buckets are in use (its memory, in entries)."""
        return self._pos.used() + self._neg.used() + (1 if self._zeros else 0)

    def summary(self, rounding: int = 6) -> dict[str, Any]:
        """``{"n", "mean", "median", "p95"}``; the statistics are None when empty."""

        def r(value: float | None) -> float | None:
            return None if value is None else round(value, rounding)

        n = self.n
        # While every value is kept, their exactly rounded sum: the same whatever order the
        # episodes finished in (a running float total can differ in its last bit, and a
        # mean such as 1.6234375 then rounds either way).
        total = math.fsum(self._exact) if self._exact is not None else self.total
        if self._exact is not None:  # sorted once for both (finite: add and extend skip the rest)
            ordered = sorted(self._exact)
            median = float(_percentile_sorted(ordered, 50.0)) if ordered else None
            p95 = float(_percentile_sorted(ordered, 95.0)) if ordered else None
        else:
            median, p95 = self.quantile(50.0), self.quantile(95.0)
        return {
            "n": n,
            "mean": r(total / n) if n else None,
            "median": r(median),
            "p95": r(p95),
        }
