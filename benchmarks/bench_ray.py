"""The Ray executor against the local one on the same episodes: same scores, and its cost.

Starts a local Ray instance with as many CPUs as the machine has and one actor per CPU
(start-up timed apart: ``ray.init`` until every actor answers), then runs the same
slice of the core suite with the oracle, alternating local and Ray runs (A B A B ...)
into fresh folders, the actors reused. Per run: wall time and CPU time per episode
(local: this process; Ray: this driver process plus every actor process). Prints the
medians with their spread, the Ray / local ratios of the medians, the machine's cores
and load, and checks that every Ray run scored every episode as the local runs did.

    python benchmarks/bench_ray.py [--epochs 4] [--rounds 5]

Target (issue #15): Ray's cost per episode within 1.2x of the local executor's at equal
cores; start-up reported apart.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from toolproof.engine import RunConfig, Runner, Worker
from toolproof.results import RunReader
from toolproof.spec import load_suite, resolve_suite_path


def scores(run_dir: Path) -> dict[str, tuple[bool, str, float]]:
    """Episode key to (passed, level, fraction)."""
    with RunReader(run_dir) as reader:
        return {
            r.key: (r.score.passed, r.score.level.value, r.score.fraction) for r in reader.records()
        }


def _fmt(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(values):6.2f} ({ordered[0]:.2f}-{ordered[-1]:.2f})"


def main() -> None:
    """Run the rounds and print the table."""
    try:
        import ray
    except ImportError:
        sys.exit("this benchmark needs ray: pip install 'toolproof[ray]'")
    from toolproof.engine.ray_executor import RayExecutor

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=16)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    suite = load_suite("core")
    config = RunConfig(suite=str(resolve_suite_path("core")), agent="oracle", epochs=args.epochs)
    episodes = len(suite.tasks) * args.epochs
    loads = [os.getloadavg()[0]]
    walls: dict[str, list[float]] = {"local": [], "ray": []}
    cpus: dict[str, list[float]] = {"local": [], "ray": []}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        ray.init(
            address="local",
            num_cpus=cores,
            include_dashboard=False,
            logging_level="ERROR",
            log_to_driver=False,
        )
        executor = RayExecutor(
            Worker(config, Path(tmp) / "ray-0", suite),
            {"actors": cores, "actor_cpus": 1, "parallel": args.parallel},
        )
        executor.actor_pids()  # every actor up
        startup_s = time.perf_counter() - start
        reference: dict[str, tuple[bool, str, float]] | None = None
        for n in range(args.rounds):
            for name in ("local", "ray"):
                run_dir = Path(tmp) / f"{name}-{n}"
                actors_before = executor.actor_cpu_s() if name == "ray" else 0.0
                cpu_before, wall_before = time.process_time(), time.perf_counter()
                runner = Runner(
                    config,
                    run_dir,
                    parallel=args.parallel,
                    suite=suite,
                    executor=executor if name == "ray" else None,
                )
                asyncio.run(runner.run())
                wall = time.perf_counter() - wall_before
                cpu = time.process_time() - cpu_before
                if name == "ray":
                    cpu += executor.actor_cpu_s() - actors_before
                walls[name].append(1000 * wall / episodes)
                cpus[name].append(1000 * cpu / episodes)
                got = scores(run_dir)
                reference = reference or got
                same = same and got == reference
            loads.append(os.getloadavg()[0])
        executor.close()
        ray.shutdown()
    print(
        f"{cores} cores, load average {min(loads):.2f}-{max(loads):.2f} (1 min), ray "
        f"{ray.__version__}, {episodes} episodes per run ({len(suite.tasks)} tasks x "
        f"{args.epochs} epochs), {args.rounds} interleaved rounds, {args.parallel} in flight"
    )
    print(f"ray start-up (init + {cores} actors up): {startup_s:.1f} s, not in the figures below")
    print("per episode, median (min-max):  wall ms          CPU ms")
    for name in ("local", "ray"):
        print(f"  {name:<5}                       {_fmt(walls[name])}   {_fmt(cpus[name])}")
    ratio_wall = statistics.median(walls["ray"]) / statistics.median(walls["local"])
    ratio_cpu = statistics.median(cpus["ray"]) / statistics.median(cpus["local"])
    print(f"ray / local: wall {ratio_wall:.2f}x, CPU {ratio_cpu:.2f}x")
    print(f"same scores on every episode of every run: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
