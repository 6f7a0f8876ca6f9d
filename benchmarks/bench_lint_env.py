"""Cost of the lint suite's pinned environments: set-up cold and warm, and one lint run.

For each environment of the ``lint`` suite (ruff; ESLint + typescript-eslint):

* **cold**: ``setup_env`` into an empty temporary cache: pip / ``npm ci`` from the
  registry (their own download caches may be warm), linking, probing, the manifest;
* **warm**: ``setup_env`` again into the same cache: the environment is reused;
* **check**: ``inspect_env``, what every episode pays before its agent starts;
* **lint run**: the harness's linter run (``run_harness``) on a task's initial
  state in the default sandbox (bwrap where it works), median and p90 of N runs,
  with the bare linter run on the host, outside any sandbox, for comparison.

Run: ``python benchmarks/bench_lint_env.py [runs]`` (default 5). Needs the package
registries for the cold set-up. No assertions.
"""

from __future__ import annotations

import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import Load

from toolproof.envs import inspect_env, run_harness, sandbox_settings, setup_env, suite_locks
from toolproof.sandbox import default_backend
from toolproof.spec import Suite, effective_sandbox, load_suite
from toolproof.spec.lint_checks import LintCheck
from toolproof.worlds import World

TASKS = {"lint-python": "py-textkit-cleanup", "lint-node": "ts-component-cleanup"}


def _samples(run: Callable[[], object], runs: int) -> list[float]:
    run()  # warm the page cache and the probes
    found = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        found.append(time.perf_counter() - start)
    return found


def _row(label: str, samples: list[float]) -> str:
    median = statistics.median(samples)
    p90 = max(samples) if len(samples) < 10 else statistics.quantiles(samples, n=10)[-1]
    return f"  {label:<28} median {1000 * median:8.1f} ms   p90 {1000 * p90:8.1f} ms"


def _lint_runs(suite: Suite, task_id: str, cache: Path, lock_path: Path, runs: int) -> None:
    task = suite.task(task_id)
    lint = next(c for c in task.success if isinstance(c, LintCheck))
    status = inspect_env(lock_path, cache)
    assert status.directory is not None
    settings = sandbox_settings(
        status, status.directory, effective_sandbox(None, suite.config.sandbox, task.sandbox)
    )
    backend = default_backend()
    with World(task.world, fixtures_base=suite.task_file(task_id).parent) as world:
        assert world.workspace is not None
        root = world.workspace.root

        def sandboxed() -> object:
            return run_harness(root, settings, backend=backend, linter=lint.linter)

        report = run_harness(root, settings, backend=backend, linter=lint.linter).report
        print(
            _row(f"{lint.linter} in {backend} ({report.errors} found)", _samples(sandboxed, runs))
        )
        program = str(status.directory / "bin" / lint.linter)
        args = ["check", "--no-cache", "."] if lint.linter == "ruff" else ["."]
        env = {"PATH": f"{status.directory / 'bin'}:/usr/bin:/bin", "HOME": "/tmp"}
        env["NODE_PATH"] = str(status.directory / "node" / "node_modules")

        def bare() -> object:
            return subprocess.run([program, *args], cwd=root, capture_output=True, env=env)

        print(_row(f"{lint.linter} on the host, bare", _samples(bare, runs)))


def main(runs: int = 5) -> None:
    """Measure and print."""
    suite = load_suite("lint")
    load = Load()
    print(f"toolproof lint environments (python {sys.version.split()[0]}, {runs} lint runs each)")
    with tempfile.TemporaryDirectory(prefix="toolproof-bench-envs-") as tmp:
        cache = Path(tmp)
        for lock_path in sorted(suite_locks(suite)):
            start = time.perf_counter()
            cold = setup_env(lock_path, cache)
            cold_s = time.perf_counter() - start
            warm = setup_env(lock_path, cache)
            name = cold.lock.name
            size = sum(p.stat().st_size for p in cold.directory.rglob("*") if p.is_file())
            print(f"{name}: {', '.join(f'{k} {v}' for k, v in cold.lock.components.items())}")
            print(f"  set-up cold (registry)       {cold_s:8.2f} s   ({size / 1e6:.1f} MB)")
            print(f"  set-up warm (reused)         {warm.seconds * 1000:8.1f} ms")
            check = functools.partial(inspect_env, lock_path, cache)
            print(_row("check before an episode", _samples(check, 20)))
            _lint_runs(suite, TASKS[name], cache, lock_path, runs)
            load.sample()
    print(load.line())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
