"""Start-up of the ``toolproof`` command against a bare ``python -c pass``.

Runs, interleaved round by round (pass, --help, list, run, pass, --help, ...), each
command as a fresh process with the same interpreter and ``PYTHONPATH`` (the source
tree of this checkout, as the ``toolproof`` console script would import it), and
prints per command the median wall time with the 10th-90th percentile spread, the
median CPU time (user + system of the child) and the ratio of medians to
``python -c pass``. The machine's core count and load average are printed beside them.

Usage::

    .venv/bin/python benchmarks/bench_startup.py [--rounds 9]

Target (issue #15): ``--help``, ``list`` and ``run`` of one tiny task each within 3x
of ``python -c pass``. ``list`` and ``run`` are measured warm (the suite index, the
plug-in cache and the bytecode written by the first round, which is left out, in a
cache folder of its own); ``run`` runs one records-world task of ``core`` with the
oracle agent, snapshots on (the default), into a fresh folder every time. The row
``floor: a run's deps`` imports only the third-party and standard-library modules a run
needs (``FLOOR``): no start-up of ``run`` can be below it without dropping one of them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY_TASK = "stock-sum"
FLOOR = (
    "import asyncio, json, sqlite3, click, jsonschema, rich.console, yaml; "
    "from pydantic import BaseModel"
)
"""The modules outside toolproof that a ``run`` imports in any design that keeps its
dependencies (asyncio for the engine, SQLite for the store, click, pydantic for the task and
record models, PyYAML for task files, jsonschema for tool arguments, rich for the console):
imported alone, they are the floor under ``run``'s start-up."""


def _commands(tmp: Path, tag: str = "") -> dict[str, list[str]]:
    entry = [sys.executable, "-c", "from toolproof.cli import main; main()"]
    commands = {
        "toolproof --help": [*entry, "--help"],
        "toolproof list": [*entry, "list"],
        "toolproof run (1 task)": [
            *entry,
            "run",
            "core",
            "--agent",
            "oracle",
            "--task",
            TINY_TASK,
            "--quiet",
            "--out",
            str(tmp / f"run{tag}-{{n}}"),
        ],
    }
    return {f"{tag}{name}": argv for name, argv in commands.items()}


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    lo = ordered[int(0.1 * (len(ordered) - 1))]
    hi = ordered[round(0.9 * (len(ordered) - 1))]
    return f"{lo * 1000:.0f}-{hi * 1000:.0f}"


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (>= 5)")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="also time another checkout's src folder (e.g. an export of main), interleaved",
    )
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # An installed package has its bytecode (pip compiles it); a development shell that sets
    # PYTHONDONTWRITEBYTECODE would make every start compile toolproof's sources again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TOOLPROOF_NO_INDEX", None)
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # its own caches, warmed by round 0
        runs = [("python -c pass", [sys.executable, "-c", "pass"], env)]
        runs.append(("floor: a run's deps", [sys.executable, "-c", FLOOR], env))
        runs += [(name, argv, env) for name, argv in _commands(Path(tmp)).items()]
        if args.baseline_src is not None:
            other = {
                **env,
                "PYTHONPATH": str(args.baseline_src.resolve()),
                "XDG_CACHE_HOME": str(Path(tmp) / "cache-baseline"),
            }
            runs += [(n, a, other) for n, a in _commands(Path(tmp), "baseline: ").items()]
        for n in range(args.rounds + 1):  # round 0 warms caches (the suite index, .pyc files)
            for name, argv, run_env in runs:
                argv = [part.replace("{n}", str(n)) for part in argv]
                wall, cpu = _timed(argv, run_env)
                if n:
                    walls.setdefault(name, []).append(wall)
                    cpus.setdefault(name, []).append(cpu)
            loads.append(os.getloadavg()[0])
    base = statistics.median(walls["python -c pass"])
    base_cpu = statistics.median(cpus["python -c pass"])
    print(
        f"{os.cpu_count()} cores, load average {min(loads):.2f}-{max(loads):.2f} "
        f"(1 min) while measuring, {args.rounds} interleaved rounds, {sys.version.split()[0]}"
    )
    print(f"{'command':<24} {'wall median':>12} {'p10-p90 ms':>12} {'CPU median':>11} {'ratio':>7}")
    for name in walls:
        wall = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        print(
            f"{name:<24} {wall * 1000:>9.1f} ms {_spread(walls[name]):>12} "
            f"{cpu * 1000:>8.1f} ms {wall / base:>6.2f}x"
            + (f"  (CPU {cpu / base_cpu:.2f}x)" if base_cpu > 0 else "")
        )


if __name__ == "__main__":
    main()
