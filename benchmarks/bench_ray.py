"""The Ray executor against the local one on the same run: same scores, and its overhead.

Runs the core suite with the oracle (records and workspace tasks) for a few epochs
on both executors, checks that every episode got the same score, and prints the
wall time per episode of each and the Ray executor's extra cost per episode.
Ray start-up is measured separately and left out of the per-episode figure.

    python benchmarks/bench_ray.py [EPOCHS]
"""

from __future__ import annotations

import asyncio
import platform
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


def main() -> None:
    try:
        import ray
    except ImportError:
        sys.exit("this benchmark needs ray: pip install 'toolproof[ray]'")
    from toolproof.engine.ray_executor import RayExecutor

    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    suite = load_suite("core")
    config = RunConfig(suite=str(resolve_suite_path("core")), agent="oracle", epochs=epochs)
    episodes = len(suite.tasks) * epochs
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}, ray {ray.__version__}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        local_dir, ray_dir = Path(tmp) / "local", Path(tmp) / "ray"
        start = time.perf_counter()
        asyncio.run(Runner(config, local_dir, parallel=16, suite=suite).run())
        local_s = time.perf_counter() - start

        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        executor = RayExecutor(
            Worker(config, ray_dir, suite), {"actors": 2, "parallel": 16, "run_dir": ray_dir}
        )
        executor.actor_pids()  # wait until the actors are up
        startup_s = time.perf_counter() - start
        start = time.perf_counter()
        asyncio.run(Runner(config, ray_dir, parallel=16, executor=executor, suite=suite).run())
        ray_s = time.perf_counter() - start
        executor.close()
        ray.shutdown()
        same = scores(local_dir) == scores(ray_dir)
    print(f"episodes: {episodes} ({len(suite.tasks)} tasks x {epochs} epochs)")
    print(f"local: {local_s:.2f}s, {1000 * local_s / episodes:.2f} ms/episode")
    per_ray = 1000 * ray_s / episodes
    print(f"ray:   {ray_s:.2f}s, {per_ray:.2f} ms/episode (+ {startup_s:.1f}s start-up)")
    extra = 1000 * (ray_s - local_s) / episodes
    print(f"ray overhead: {extra:+.2f} ms/episode, ratio {ray_s / local_s:.2f}x")
    print(f"same scores on every episode: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
