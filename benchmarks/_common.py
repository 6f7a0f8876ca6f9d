"""What every benchmark here shares: the machine line, interleaved rounds, medians with
their spread, and whole-process CPU, wall and peak memory of a command.

A figure taken on a shared machine means little without the machine's state beside it,
so each benchmark prints :meth:`Load.line` (core count and the 1-minute load average
sampled while it measured). Comparisons run interleaved (A B A B ...: :func:`interleave`)
so that a change in load hits every side alike, and are summarised as a median with the
range of the rounds (:func:`spread`), CPU time beside wall time.

:func:`run_process` measures a process from outside, as a user would see it: wall time
from launch to exit, CPU time (user + system) of the process and of every descendant it
waited for, and the peak resident memory of the largest of them (``wait4``).
:func:`run_cli` runs ``toolproof`` itself in a fresh interpreter (the console script's
entry point, ``toolproof.cli.main``) and also reports, from inside that process, its own
peak memory and its children's (worker processes: ``RUSAGE_CHILDREN``), and optionally
the wall and CPU time of the run proper (``Runner.run``: the timed region).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

CLI_PROBE = r"""
import atexit, json, os, resource, sys, time
_out = os.environ.pop("TOOLPROOF_BENCH_OUT")
_figures = {}

def _usage(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime, r.ru_maxrss / 1024

@atexit.register
def _report():
    cpu, rss = _usage(resource.RUSAGE_SELF)
    kids_cpu, kids_rss = _usage(resource.RUSAGE_CHILDREN)
    _figures.update(self_cpu_s=cpu, self_rss_mb=rss, children_cpu_s=kids_cpu,
                    children_rss_mb=kids_rss)
    with open(_out, "w") as fh:
        json.dump(_figures, fh)

if os.environ.pop("TOOLPROOF_BENCH_TIMED", "") == "1":
    # The timed region: Runner.run (the episodes, their scoring and the store), workers'
    # CPU counted through RUSAGE_CHILDREN.
    # The episode phase: from there to the last episode stored (RunStore.append).
    from toolproof.engine import runner as _runner
    from toolproof.results import store as _store
    _run, _append = _runner.Runner.run, _store.RunStore.append
    _started = [0.0]

    async def _timed_run(self, *args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        kids = _usage(resource.RUSAGE_CHILDREN)[0]
        _started[0] = wall
        try:
            return await _run(self, *args, **kwargs)
        finally:
            _figures["timed_wall_s"] = time.perf_counter() - wall
            _figures["timed_cpu_s"] = (time.process_time() - cpu
                                       + _usage(resource.RUSAGE_CHILDREN)[0] - kids)

    def _counted_append(self, record):
        _append(self, record)
        _figures["phase_s"] = time.perf_counter() - _started[0]

    _runner.Runner.run = _timed_run
    _store.RunStore.append = _counted_append

from toolproof.cli import main
main(sys.argv[1:])
"""
"""The ``toolproof`` command in a fresh interpreter, reporting its figures at exit to the
file named by ``TOOLPROOF_BENCH_OUT``. Wrapping ``Runner.run`` and ``RunStore.append`` (only
with ``TOOLPROOF_BENCH_TIMED=1``) to read the clock changes nothing the command does; it
imports their modules first, which the command imports anyway."""


class Load:
    """The machine's 1-minute load average, sampled while a benchmark measures."""

    def __init__(self) -> None:
        self.samples: list[float] = [os.getloadavg()[0]]

    def sample(self) -> float:
        """Record the current load average; return it."""
        load = os.getloadavg()[0]
        self.samples.append(load)
        return load

    def line(self) -> str:
        """The machine, its cores and the load seen, for the head of every table."""
        lo, hi = min(self.samples), max(self.samples)
        return (
            f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; load average (1 min) {lo:.2f}-{hi:.2f} "
            f"while measuring ({len(self.samples)} samples)"
        )


def interleave(
    setups: Mapping[str, Callable[[int], T]],
    rounds: int,
    load: Load | None = None,
    first: int = 0,
) -> dict[str, list[T]]:
    """Run every set-up once per round, in turn (A B C A B C ...); their results by name.

    Each set-up is called with the round's number (from ``first``), so that it can write
    to a fresh folder; the load is sampled after every call.
    """
    results: dict[str, list[T]] = {name: [] for name in setups}
    for n in range(first, first + rounds):
        for name, setup in setups.items():
            results[name].append(setup(n))
            if load is not None:
                load.sample()
    return results


def spread(values: Sequence[float], fmt: str = ".2f", scale: float = 1.0) -> str:
    """``median (min-max)`` of ``values`` times ``scale``, each formatted with ``fmt``."""
    scaled = [v * scale for v in values]
    med = statistics.median(scaled)
    return f"{med:{fmt}} ({min(scaled):{fmt}}-{max(scaled):{fmt}})"


def median(values: Sequence[float]) -> float:
    """The median (a name to import beside :func:`spread`)."""
    return statistics.median(values)


@dataclass
class ProcessRun:
    """One process measured from outside, and what it reported from inside."""

    wall_s: float
    cpu_s: float  # user + system of the process and every descendant it waited for
    max_rss_mb: float  # the largest of them
    returncode: int
    stdout: str
    stderr: str
    inside: dict[str, float] = field(default_factory=dict)


def run_process(
    argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ProcessRun:
    """Launch ``argv`` and wait for it: wall, CPU and peak memory through ``wait4``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), env=dict(env or os.environ), cwd=cwd, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ProcessRun(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            max_rss_mb=usage.ru_maxrss / 1024,
            returncode=proc.returncode,
            stdout=out.read(),
            stderr=err.read(),
        )


def bench_env(*extra_paths: Path) -> dict[str, str]:
    """The environment of a measured ``toolproof``: this checkout's sources first on the
    path (as the console script imports them), bytecode writing left on."""
    paths = [str(ROOT / "src"), *map(str, extra_paths)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    timed: bool = False,
    check: bool = True,
) -> ProcessRun:
    """``toolproof ARGS`` in a fresh interpreter, measured from outside and inside.

    ``inside`` holds ``self_cpu_s``/``self_rss_mb`` (the command's process),
    ``children_cpu_s``/``children_rss_mb`` (its worker and helper processes; the peak is
    the largest child's), and with ``timed`` ``timed_wall_s``/``timed_cpu_s`` (the run
    proper, ``Runner.run``, workers' CPU included) and ``phase_s`` (from the start of
    ``Runner.run`` to the last episode stored).
    """
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "figures.json"
        run_env = {**(env if env is not None else bench_env()), "TOOLPROOF_BENCH_OUT": str(report)}
        if timed:
            run_env["TOOLPROOF_BENCH_TIMED"] = "1"
        run = run_process([sys.executable, "-c", CLI_PROBE, *args], run_env)
        if report.exists():
            run.inside = json.loads(report.read_text())
    if check and run.returncode != 0:
        sys.exit(f"toolproof {' '.join(args)} failed ({run.returncode}): {run.stderr[-1500:]}")
    return run


def chosen(output: str) -> str:
    """What a run said it chose by itself (worker processes, the agent's loop), if anything."""
    said = [line.strip() for line in output.splitlines() if "running with" in line]
    return said[0] if said else "one process (the run chose nothing itself)"


def figures(run: ProcessRun) -> dict[str, Any]:
    """A flat dict of a run's figures (for JSON output)."""
    return {
        "wall_s": run.wall_s,
        "cpu_s": run.cpu_s,
        "max_rss_mb": run.max_rss_mb,
        **run.inside,
    }
