"""Cost of a run against its size: wall time and peak memory for 1k, 10k and 50k episodes.

Records worlds and the oracle agent, so the harness itself is all that is measured.
Each size runs in a fresh process so its peak RSS is its own. Linear time shows as
a flat "ms per episode" column; flat memory as a peak RSS that does not grow with size.

    python benchmarks/bench_scaling.py            # 1k, 10k, 50k
    python benchmarks/bench_scaling.py 1000 5000  # other sizes
"""

from __future__ import annotations

import json
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
start = time.perf_counter()
summary = asyncio.run(Runner(config, run_dir, parallel=64, suite=suite).run())
wall = time.perf_counter() - start
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"episodes": summary["episodes"]["finished"], "wall_s": wall,
                  "peak_mb": peak_mb, "passed": summary["success"]["successes"]}))
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
        f"Python {platform.python_version()}"
    )
    print(f"{'episodes':>9} {'wall s':>8} {'ms/episode':>11} {'peak MB':>8} {'passed':>7}")
    rows = []
    for size in sizes:
        start = time.perf_counter()
        row = measure(size)
        rows.append(row)
        print(
            f"{int(row['episodes']):>9} {row['wall_s']:>8.1f} "
            f"{1000 * row['wall_s'] / row['episodes']:>11.2f} {row['peak_mb']:>8.0f} "
            f"{int(row['passed']):>7}   ({time.perf_counter() - start:.0f}s with start-up)",
            flush=True,
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        per_first = first["wall_s"] / first["episodes"]
        per_last = last["wall_s"] / last["episodes"]
        print(f"time per episode, largest vs smallest: {per_last / per_first:.2f}x (1.0 = linear)")
        print(
            f"peak memory, largest vs smallest: {last['peak_mb'] / first['peak_mb']:.2f}x "
            "(1.0 = flat)"
        )


if __name__ == "__main__":
    main()
