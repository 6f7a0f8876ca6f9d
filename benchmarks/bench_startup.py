"""Start-up of the ``toolproof`` command, cold and warm, against the floor of its imports.

Runs, interleaved round by round (every command once per round, in turn), each command as
a fresh process of the same interpreter with this checkout's sources on ``PYTHONPATH``
(as the ``toolproof`` console script imports them), and prints per command the median wall
time with its range, the median CPU time (user + system, the process and its children),
and the ratios of medians to ``python -c pass`` and to the floor. The machine's cores and
load average are printed with them.

Usage::

    .venv/bin/python benchmarks/bench_startup.py [--rounds 7]

*Warm* runs reuse toolproof's cache folder (``XDG_CACHE_HOME``: the suite index with the
record of checked suites, the plug-in cache, the kept text of ``list``), written by the
round before; *cold* runs get an empty cache folder every time, so ``list`` loads every
built-in suite and ``run`` loads and checks all of ``core`` before its one task. Python's
bytecode (``__pycache__``) is kept in both: it is written when the package is installed, so
a user's first run has it too. ``run`` runs the core task ``stock-sum`` once with the oracle
agent at the defaults (snapshots on) into a fresh folder.

The row ``floor: a run's deps`` imports only the third-party and standard-library modules a
run needs (``FLOOR``): no start-up of ``run`` can be below it without dropping one of them.

Targets: issue #15, ``--help`` and a warm ``list`` within 3x of ``python -c pass``;
issue #34, a warm ``run`` of one tiny task within 2x of the floor.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _common import Load, ProcessRun, bench_env, interleave, median, run_process, spread

TINY_TASK = "stock-sum"
FLOOR = (
    "import asyncio, json, sqlite3, click, jsonschema, rich.console, yaml; "
    "from pydantic import BaseModel"
)
"""The modules outside toolproof that a ``run`` imports in any design that keeps its
dependencies (asyncio for the engine, SQLite for the store, click, pydantic for the task and
record models, PyYAML for task files, jsonschema for tool arguments, rich for the console):
imported alone, they are the floor under ``run``'s start-up."""
ENTRY = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]


def _setups(tmp: Path) -> dict[str, Callable[[int], ProcessRun]]:
    warm_env = {**bench_env(), "XDG_CACHE_HOME": str(tmp / "warm-cache")}
    warm_env.pop("TOOLPROOF_NO_INDEX", None)

    def cold_env(n: int, name: str) -> dict[str, str]:
        return {**warm_env, "XDG_CACHE_HOME": str(tmp / f"cold-{name}-{n}")}

    def command(argv: list[str], cold: str = "") -> Callable[[int], ProcessRun]:
        def setup(n: int) -> ProcessRun:
            args = [part.replace("{n}", f"{cold or 'warm'}-{n}") for part in argv]
            run = run_process(args, cold_env(n, cold) if cold else warm_env)
            if run.returncode != 0:
                sys.exit(f"{' '.join(args)} failed ({run.returncode}): {run.stderr[-800:]}")
            return run

        return setup

    run = ["run", "core", "--agent", "oracle", "--task", TINY_TASK, "--quiet"]
    out = ["--out", str(tmp / "runs" / "run-{n}")]
    return {
        "python -c pass": command([sys.executable, "-c", "pass"]),
        "floor: a run's deps": command([sys.executable, "-c", FLOOR]),
        "toolproof --help": command([*ENTRY, "--help"]),
        "toolproof run --help": command([*ENTRY, "run", "--help"]),
        "toolproof list, warm": command([*ENTRY, "list"]),
        "toolproof list, cold": command([*ENTRY, "list"], cold="list"),
        "toolproof run (1 task), warm": command([*ENTRY, *run, *out]),
        "toolproof run (1 task), cold": command([*ENTRY, *run, *out], cold="run"),
    }


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (>= 3)")
    args = parser.parse_args()
    load = Load()
    with tempfile.TemporaryDirectory() as tmp:
        setups = _setups(Path(tmp))
        interleave(setups, 1)  # round 0 warms the warm cache folder and the page cache
        runs = interleave(setups, args.rounds, load, first=1)
    print(load.line())
    print(
        f"{args.rounds} interleaved rounds; warm: toolproof's caches kept from the round "
        "before; cold: an empty cache folder; Python's __pycache__ kept in both"
    )
    base = median([r.wall_s for r in runs["python -c pass"]])
    base_cpu = median([r.cpu_s for r in runs["python -c pass"]])
    floor = median([r.wall_s for r in runs["floor: a run's deps"]])
    floor_cpu = median([r.cpu_s for r in runs["floor: a run's deps"]])
    print(
        f"{'command':<30} {'wall ms median (range)':>24} {'CPU ms median (range)':>24} "
        f"{'x pass':>7} {'x floor':>8} {'CPU x floor':>11}"
    )
    for name, rows in runs.items():
        wall = median([r.wall_s for r in rows])
        cpu = median([r.cpu_s for r in rows])
        print(
            f"{name:<30} {spread([r.wall_s for r in rows], '.0f', 1000):>24} "
            f"{spread([r.cpu_s for r in rows], '.0f', 1000):>24} {wall / base:>6.2f}x "
            f"{wall / floor:>7.2f}x {cpu / floor_cpu if floor_cpu else float('nan'):>10.2f}x"
        )
    print(f"(python -c pass: {base * 1000:.0f} ms wall, {base_cpu * 1000:.0f} ms CPU)")


if __name__ == "__main__":
    main()
