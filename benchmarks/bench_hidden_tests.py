"""What a hidden-test run costs against the plain test command an agent runs.

On the hard tier's ``repo-slots-merge`` (epoch 0, the initial workspace), interleaved
round by round:

* A, ``plain``: ``python3 -m unittest discover -s tests`` in a fresh sandbox on the
  workspace, as an agent's ``run_command`` runs it;
* B, ``hidden``: every ``hidden_tests`` check of the task observed with the memo cleared
  (what an episode pays): per check, the clean copy written to a fresh directory, the
  observer run as ``python3 -c`` in a fresh sandbox, each case's value parsed and decoded;
* C, ``memo``: the same runs again, answered from the memo (what an episode whose final
  tree was seen before pays).

Medians over the rounds with their range, wall and CPU (this process and its children).
Each side at its defaults (the host's default sandbox backend).

    python benchmarks/bench_hidden_tests.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolproof.sandbox import ResourceLimits, default_backend, get_backend
from toolproof.scoring.checks import _hiddenrun
from toolproof.spec import Limits, SandboxSpec, load_suite, render
from toolproof.spec.hidden_checks import HiddenTestsCheck

TASK = "repo-slots-merge"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _measure(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _cpu()
    fn()
    return time.perf_counter() - wall, _cpu() - cpu


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    suite = load_suite("hard")
    task = suite.task(TASK)
    inst = render(
        task, suite="hard", suite_seed=suite.config.seed, epoch=0, limits=Limits(), system_prompt=""
    )
    root = (suite.task_file(TASK).parent / str(task.world.fixtures)).resolve()
    initial = {
        p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
    }
    initial.update({k: v.encode() for k, v in inst.task.world.files.items()})
    specs = [c for c in inst.task.success if isinstance(c, HiddenTestsCheck)]
    trees = [_hiddenrun.tree_for(spec, initial, initial) for spec in specs]
    settings = SandboxSpec()
    backend = default_backend()

    def plain() -> None:
        work = Path(tempfile.mkdtemp(prefix="bench-hidden-"))
        try:
            _hiddenrun._write(work, initial)
            with get_backend(backend)(work) as box:
                done = box.exec(
                    "python3 -m unittest discover -s tests",
                    limits=ResourceLimits(wall_s=60),
                    env={"PYTHONDONTWRITEBYTECODE": "1"},
                )
            assert done.exit_code == 1, done.stderr[-300:]  # the bug: two tests fail
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def hidden() -> None:
        _hiddenrun._CACHE.clear()
        for spec, tree in zip(specs, trees, strict=True):
            found = _hiddenrun.run_cases(spec, tree, settings)
            assert found.values and not found.problems, found

    def memo() -> None:
        for spec, tree in zip(specs, trees, strict=True):
            assert _hiddenrun.run_cases(spec, tree, settings).values

    sides = {"plain": plain, "hidden": hidden, "memo": memo}
    for fn in sides.values():
        fn()  # warm up: imports, the sandbox probe
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for name, fn in sides.items():
            times[name].append(_measure(fn))
        load.append(os.getloadavg()[0])
    print(
        f"{TASK} ({len(specs)} hidden checks), backend {backend}, {args.rounds} rounds, "
        f"load average {min(load):.1f}-{max(load):.1f}"
    )
    print(f"{'side':8} {'wall median (range) ms':28} {'CPU median (range) ms':28}")
    base = statistics.median(w for w, _ in times["plain"])
    for name, rows in times.items():
        walls = [w * 1000 for w, _ in rows]
        cpus = [c * 1000 for _, c in rows]
        print(
            f"{name:8} {statistics.median(walls):7.1f} ({min(walls):.1f}-{max(walls):.1f})"
            f"{'':8} {statistics.median(cpus):7.1f} ({min(cpus):.1f}-{max(cpus):.1f})"
            f"   x{statistics.median(walls) / 1000 / base:.2f} of plain"
        )


if __name__ == "__main__":
    main()
