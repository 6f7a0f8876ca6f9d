"""Cost of a run against its size: wall time and peak memory for 1k, 10k and 50k episodes.

Records worlds and the oracle agent, so the harness itself is all that is measured.
Each size runs in a fresh process so its peak RSS is its own. Linear time shows as
a flat "CPU ms per episode" column (CPU time: wall time moves with the machine's
load, printed beside it); flat memory as a peak RSS (the final summary included) that
does not grow with size; the run directory's size per episode shows each trajectory
stored once.

    python benchmarks/bench_scaling.py            # 1k, 10k, 50k
    python benchmarks/bench_scaling.py 1000 5000  # other sizes
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from toolproof.engine import RunConfig, Runner
from toolproof.spec import load_suite, resolve_suite_path

episodes, run_dir = int(sys.argv[1]), Path(sys.argv[2])
suite = load_suite("core")
records_only = [t.id for t in suite.tasks if not t.world.needs_workspace]
epochs = -(-episodes // len(records_only))
config = RunConfig(suite=str(resolve_suite_path("core")), agent="oracle", epochs=epochs,
                   tasks=records_only, snapshots=False)
start, cpu = time.perf_counter(), time.process_time()
summary = asyncio.run(Runner(config, run_dir, parallel=64, suite=suite).run())
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
disk = sum(p.stat().st_size for p in run_dir.iterdir() if p.is_file())
print(json.dumps({"episodes": summary["episodes"]["finished"], "wall_s": wall, "cpu_s": cpu,
                  "peak_mb": peak_mb, "passed": summary["success"]["successes"],
                  "disk_kb_per_episode": disk / 1024 / summary["episodes"]["finished"]}))
"""


def measure(episodes: int) -> dict[str, float]:
    """Run one size in a child process and return its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(episodes), str(Path(tmp) / "run")],
            check=True,
            capture_output=True,
            text=True,
        )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 50_000]
    print(
        f"machine: {platform.machine()}, {platform.processor() or '?'}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores"
    )
    print(
        f"{'episodes':>9} {'wall s':>8} {'CPU ms/ep':>10} {'peak MB':>8} {'KB/ep disk':>10} "
        f"{'passed':>7} {'load':>5}"
    )
    rows = []
    for size in sizes:
        start = time.perf_counter()
        row = measure(size)
        rows.append(row)
        print(
            f"{int(row['episodes']):>9} {row['wall_s']:>8.1f} "
            f"{1000 * row['cpu_s'] / row['episodes']:>10.2f} {row['peak_mb']:>8.0f} "
            f"{row['disk_kb_per_episode']:>10.1f} {int(row['passed']):>7} "
            f"{os.getloadavg()[0]:>5.1f}   ({time.perf_counter() - start:.0f}s with start-up)",
            flush=True,
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        per_first = first["cpu_s"] / first["episodes"]
        per_last = last["cpu_s"] / last["episodes"]
        print(f"CPU per episode, largest vs smallest: {per_last / per_first:.2f}x (1.0 = linear)")
        print(
            f"peak memory, largest vs smallest: {last['peak_mb'] / first['peak_mb']:.2f}x "
            "(1.0 = flat)"
        )


if __name__ == "__main__":
    main()
