"""Two runs side by side: the paired comparison of :mod:`toolproof.metrics.compare`,
plus per-task success counts from the episode rows.

Runs of different suites, seeds or tracks are still compared (the page shows why
they may not pair); results are cached until either run changes.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from toolproof.results import RunReader

from ._overview import prop, stamp_of

MAX_FLIPS = 2000
"""Flipped episodes listed per direction; the counts are always complete."""


def _task_counts(run_dir: Path) -> dict[str, list[int]]:
    tasks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    with RunReader(run_dir) as reader:
        for row in reader.rows():
            if row["termination"] != "infra_error":
                tasks[row["task_id"]][0] += row["passed"]
                tasks[row["task_id"]][1] += 1
    return dict(tasks)


def _change(a: list[int] | None, b: list[int] | None) -> str:
    if a is None or b is None:
        return "only in b" if a is None else "only in a"
    ra, rb = a[0] / a[1], b[0] / b[1]
    return "fixed" if rb > ra else "broke" if rb < ra else "same"


def task_table(ta: dict[str, list[int]], tb: dict[str, list[int]]) -> list[dict[str, Any]]:
    """Per task: ``[passed, episodes]`` in each run and whether it got better or worse."""
    rows = [
        {"task_id": t, "a": ta.get(t), "b": tb.get(t), "change": _change(ta.get(t), tb.get(t))}
        for t in sorted(ta.keys() | tb.keys())
    ]
    return sorted(rows, key=lambda r: (r["change"] == "same", r["task_id"]))


def _success(counts: dict[str, list[int]]) -> dict[str, Any]:
    return prop(sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values()))


def compare_view(a_dir: Path, b_dir: Path) -> dict[str, Any]:
    """Everything the compare page shows, JSON-ready."""
    from toolproof.metrics.compare import compare_runs

    comparison = compare_runs(a_dir, b_dir, allow_mismatch=True).to_dict()
    for name in ("regressions", "improvements"):
        comparison[f"{name}_total"] = len(comparison[name])
        comparison[name] = comparison[name][:MAX_FLIPS]
    ta, tb = _task_counts(a_dir), _task_counts(b_dir)
    return {
        **comparison,
        "tasks": task_table(ta, tb),
        "success": {"a": _success(ta), "b": _success(tb)},
    }


class CompareCache:
    """Comparisons by run pair, recomputed when either run's database changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[Path, Path], tuple[tuple[float, ...], dict[str, Any]]] = {}

    def get(self, a_dir: Path, b_dir: Path) -> dict[str, Any]:
        """The comparison of run ``b_dir`` against run ``a_dir``."""
        stamp = (*stamp_of(a_dir), *stamp_of(b_dir))
        with self._lock:
            hit = self._cache.get((a_dir, b_dir))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = compare_view(a_dir, b_dir)
        with self._lock:
            self._cache[(a_dir, b_dir)] = (stamp, value)
        return value
