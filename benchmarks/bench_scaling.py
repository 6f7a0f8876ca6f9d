"""Cost of a run against its size: wall time and peak memory for 1k, 10k and 50k episodes.

Records worlds and the oracle agent, so the harness itself is all that is measured, at
the run's defaults: per-step snapshots on (``--no-snapshots`` to compare without), 64 in
flight. Each size runs in a fresh process so its peak RSS is its own (a worker or helper
process's peak is printed beside it, and its CPU time counted). Linear time shows as
a flat "CPU ms per episode" column (CPU time: wall time moves with the machine's
load, printed beside it); flat memory as a peak RSS (the final summary included) that
does not grow with size; the run directory's size per episode shows each trajectory
stored once.

    python benchmarks/bench_scaling.py            # 1k, 10k, 50k
    python benchmarks/bench_scaling.py 1000 5000  # other sizes
    python benchmarks/bench_scaling.py --against /tmp/old/src --reps 2  # A B, B A, ... per size
    python benchmarks/bench_scaling.py 1000 --no-snapshots

``--against`` runs another checkout's ``src`` (say ``git worktree add /tmp/old REV``) beside
this one, interleaved per size and repetition, and prints each side's medians and ranges.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Load

CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from toolproof.engine import RunConfig, Runner
from toolproof.spec import load_suite, resolve_suite_path

episodes, run_dir, snapshots = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "True"
suite = load_suite("core")
records_only = [t.id for t in suite.tasks if not t.world.needs_workspace]
epochs = -(-episodes // len(records_only))
config = RunConfig(suite=str(resolve_suite_path("core")), agent="oracle", epochs=epochs,
                   tasks=records_only, **({} if snapshots else {"snapshots": False}))
def kids_cpu():
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime
start, cpu, kids = time.perf_counter(), time.process_time(), kids_cpu()
summary = asyncio.run(Runner(config, run_dir, parallel=64, suite=suite).run())
wall, cpu = time.perf_counter() - start, time.process_time() - cpu + kids_cpu() - kids
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
disk = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
print(json.dumps({"episodes": summary["episodes"]["finished"], "wall_s": wall, "cpu_s": cpu,
                  "peak_mb": peak_mb, "child_mb": child_mb,
                  "passed": summary["success"]["successes"],
                  "disk_kb_per_episode": disk / 1024 / summary["episodes"]["finished"]}))
"""


def measure(episodes: int, src: str | None = None, snapshots: bool = True) -> dict[str, float]:
    """Run one size in a child process (with ``src`` first on its path) and return its figures."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory() as tmp:
        argv = [CHILD, str(episodes), str(Path(tmp) / "run"), str(snapshots)]
        out = subprocess.run(
            [sys.executable, "-c", *argv],
            capture_output=True,
            text=True,
            env=env,
        )
    if out.returncode != 0:
        sys.exit(f"the run of {episodes} episodes failed: {out.stderr[-1500:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _row(label: str, row: dict[str, float], took_s: float) -> None:
    print(
        f"{label:>8} {int(row['episodes']):>9} {row['wall_s']:>8.1f} "
        f"{1000 * row['cpu_s'] / row['episodes']:>10.2f} {row['peak_mb']:>8.1f} "
        f"{row['child_mb']:>8.1f} "
        f"{row['disk_kb_per_episode']:>10.1f} {int(row['passed']):>7} "
        f"{os.getloadavg()[0]:>5.1f}   ({took_s:.0f}s with start-up)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000, 50_000])
    parser.add_argument("--against", help="another checkout's src folder, run interleaved")
    parser.add_argument("--reps", type=int, default=1, help="repetitions of each size and side")
    parser.add_argument("--no-snapshots", action="store_true", help="not the default: compare")
    args = parser.parse_args()
    sides: dict[str, str | None] = {"this": None}
    if args.against:
        sides["against"] = args.against
    load = Load()
    print(load.line())
    print(f"snapshots {'off (--no-snapshots)' if args.no_snapshots else 'on (the default)'}")
    print(
        f"{'side':>8} {'episodes':>9} {'wall s':>8} {'CPU ms/ep':>10} {'peak MB':>8} "
        f"{'child MB':>8} "
        f"{'KB/ep disk':>10} {'passed':>7} {'load':>5}"
    )
    rows: dict[str, dict[int, list[dict[str, float]]]] = {side: {} for side in sides}
    for size in args.sizes:
        for rep in range(args.reps):
            order = list(sides.items())
            for side, src in order if rep % 2 == 0 else order[::-1]:  # A B, then B A
                start = time.perf_counter()
                row = measure(size, src, snapshots=not args.no_snapshots)
                load.sample()
                rows[side].setdefault(size, []).append(row)
                _row(side, row, time.perf_counter() - start)
    for side, by_size in rows.items():
        peaks = {size: [r["peak_mb"] for r in runs] for size, runs in by_size.items()}
        cpus = {size: [r["cpu_s"] / r["episodes"] for r in runs] for size, runs in by_size.items()}
        for size, runs in by_size.items():
            episodes = int(runs[0]["episodes"])
            print(
                f"{side}: {episodes:>6} episodes: peak {statistics.median(peaks[size]):.1f} MB "
                f"({min(peaks[size]):.1f}-{max(peaks[size]):.1f}), CPU "
                f"{1000 * statistics.median(cpus[size]):.2f} ms/episode"
            )
        if len(by_size) > 1:
            small, large = min(by_size), max(by_size)
            print(
                f"{side}: peak memory, largest vs smallest: "
                f"{statistics.median(peaks[large]) / statistics.median(peaks[small]):.2f}x "
                f"(1.0 = flat); CPU per episode: "
                f"{statistics.median(cpus[large]) / statistics.median(cpus[small]):.2f}x "
                "(1.0 = linear)"
            )
    print(load.line())


if __name__ == "__main__":
    main()
