"""The benchmarks' shared measuring (``benchmarks/_common.py``) measures what it says.

The benchmarks' figures are only as good as their probes: these tests run the real
``toolproof`` command through :func:`run_cli` and check that every figure the benchmarks
print is there and plausible (no timing thresholds), and that the probe's wrapping of
``Runner.run`` and ``RunStore.append`` still finds them (a rename would silently drop
the timed region).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from _common import Load, bench_env, interleave, run_cli, run_process, spread  # noqa: E402


def test_a_run_reports_the_whole_process_and_its_timed_region(tmp_path: Path) -> None:
    env = {**bench_env(BENCHMARKS), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    args = ["run", "core", "--agent", "python:_overhead_agent:StockSumReader"]
    args += ["--task", "stock-sum", "--epochs", "2", "--out", str(tmp_path / "run")]
    run = run_cli(args, env, timed=True)
    assert run.returncode == 0
    inside = run.inside
    for key in ("timed_wall_s", "timed_cpu_s", "phase_s", "self_cpu_s", "self_rss_mb"):
        assert inside[key] > 0, key
    assert 0 < inside["phase_s"] <= inside["timed_wall_s"] < run.wall_s
    assert inside["self_cpu_s"] <= run.cpu_s + 0.05  # the process is part of what wait4 saw
    assert run.max_rss_mb >= inside["self_rss_mb"] * 0.9
    assert "success 100.0% (2/2)" in run.stdout  # the reading agent solves stock-sum


def test_a_failing_command_is_reported_not_hidden(tmp_path: Path) -> None:
    env = {**bench_env(), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = run_cli(["run", "no-such-suite", "--agent", "oracle"], env, check=False)
    assert run.returncode == 2 and "no-such-suite" in run.stderr
    with pytest.raises(SystemExit, match="failed"):
        run_cli(["run", "no-such-suite", "--agent", "oracle"], env)


def test_rounds_interleave_and_medians_show_their_range() -> None:
    order: list[str] = []
    load = Load()
    results = interleave(
        {"a": lambda n: order.append(f"a{n}") or n, "b": lambda n: order.append(f"b{n}") or n},
        3,
        load,
        first=1,
    )
    assert order == ["a1", "b1", "a2", "b2", "a3", "b3"]
    assert results == {"a": [1, 2, 3], "b": [1, 2, 3]}
    assert len(load.samples) == 7 and "cores" in load.line()
    assert spread([0.003, 0.001, 0.002], ".1f", 1000) == "2.0 (1.0-3.0)"
    assert run_process([sys.executable, "-c", "pass"]).returncode == 0
