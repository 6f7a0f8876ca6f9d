"""Per-command cost of the hardened bwrap sandbox against a bare bwrap call and fork/exec.

Runs ``true`` through, interleaved in blocks (A B C D A B C D ...) so that load changes
hit every variant alike:

* ``fork/exec``: ``subprocess.run(["true"])``, the floor;
* ``bare bwrap``: the same bwrap command line the backend builds (same namespaces,
  binds, generated /etc), but no cgroup, no rlimits, no seccomp filter, no
  capability drop and no uid drop, started directly by the harness;
* ``process backend``: limits and clean-up without isolation;
* ``bwrap backend``: everything a real command pays: the cgroup (when root: the
  sandbox's spawner, moved into the sandbox cgroup once, starts the command there
  through its exec helper; see ``_spawner``), the start as the sandbox user, the
  seccomp filter, the rlimits, the output pump, the owner walk and the workspace
  size check.

With ``--breakdown``, three more variants show where the difference goes:

* ``bwrap as user``: bare bwrap started as the sandbox user with the seccomp filter
  and ``--cap-drop ALL`` (what the kernel charges for the guarantees inside bwrap);
* ``backend, no cgroup``: the bwrap backend with cgroups switched off for the run
  (never a configuration to use: only to price the cgroup);
* ``backend, no spawner``: the bwrap backend on its per-command path (a fresh
  cgroup per command, the command moved into it behind a gate): what a command
  pays when its sandbox's spawner is busy with another one.

CPU is the whole process tree's as it is reaped: the harness (``RUSAGE_SELF``), what
it reaped (``RUSAGE_CHILDREN``: bare bwrap and everything below it) and, for the
backend, the spawner with everything it reaped (bwrap, ``true``), from ``/proc``
(ticks of 10 ms: so each sample is a block of ``--block`` calls, and a variant's
figure is the median per call over the blocks, with the 10th-90th percentile spread).
As root with a cgroup v1 ``cpuacct`` hierarchy, an "all cpu" column adds every
process's CPU in nanoseconds (``_TreeClock``), including what no process here reaps:
bwrap's pid 1 tears the namespaces down (≈8 ms here, for bare bwrap and the backend
alike) and is reaped by init (or a subreaper), not by whoever started bwrap. Wall
time is per call. Prints the machine's cores and load average before and after,
and the ratio of the bwrap backend to bare bwrap (target: at most 1.5x).

``--pause S`` sleeps S seconds before each call, as an agent thinking between commands
does: the cgroup v1 attach then waits for a full RCU grace period, which back-to-back
calls mostly skip.

Run: ``python benchmarks/bench_sandbox.py [rounds] [--block N] [--files N] [--breakdown]
[--pause S]`` (default 30 rounds of blocks of 10 calls, 200 files in the workspace).
No assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolproof.sandbox import Sandbox, _launch, get_backend
from toolproof.sandbox._cgroup import CgroupSupport, host_support
from toolproof.sandbox._identity import sandbox_owner
from toolproof.sandbox.bwrap._backend import _PATH, _probe, _write_etc, build_argv, seccomp_pipe
from toolproof.sandbox.bwrap._spawner import Spawner


def _cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime


_CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class _TreeClock:
    """CPU seconds of every process this one started, however it ended.

    Where a root harness can make a cgroup v1 ``cpuacct`` group, this process moves
    into one of its own first: every process it starts (the spawners, bwrap, the
    commands) is born there too (the sandboxes' own cgroups are in the pids and memory
    hierarchies only), and ``cpuacct.usage`` counts them all in nanoseconds, also the
    ones nobody here reaps: with ``--unshare-pid`` the namespaces are torn down by
    bwrap's pid 1, which init (or a subreaper) reaps, so ``getrusage`` never sees that CPU.
    """

    def __init__(self) -> None:
        self.group: Path | None = None
        if os.geteuid() != 0 or not (_CPUACCT / "cgroup.procs").exists():
            return
        group = _CPUACCT / f"toolproof-bench-{os.getpid()}"
        try:
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            return
        self.group = group

    def seconds(self) -> float | None:
        """CPU seconds of the tree so far, or None without a cpuacct group."""
        if self.group is None:
            return None
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        if self.group is None:
            return
        with contextlib.suppress(OSError):
            (_CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()


def _bare_bwrap(workspace: Path, etc: Path) -> Callable[[], object]:
    _, bwrap, features = _probe()
    argv = build_argv(bwrap, features, workspace=workspace, etc=etc, cwd="/workspace",
                      env={"PATH": _PATH}, tmp_bytes=None)  # fmt: skip
    if "--cap-drop" in argv:  # the hardening's own option; bare bwrap goes without it
        drop = argv.index("--cap-drop")
        argv = argv[:drop] + argv[drop + 2 :]
    argv = [*argv, "true"]
    return lambda: subprocess.run(argv, check=True, env={"PATH": _PATH})


def _user_bwrap(workspace: Path, etc: Path) -> Callable[[], object]:
    _, bwrap, features = _probe()
    owner = sandbox_owner()

    def run() -> None:
        seccomp = seccomp_pipe()
        argv = build_argv(bwrap, features, workspace=workspace, etc=etc, cwd="/workspace",
                          env={"PATH": _PATH}, tmp_bytes=None, seccomp_fd=seccomp)  # fmt: skip
        try:
            subprocess.run([*argv, "true"], check=True, env={"PATH": _PATH},
                           pass_fds=() if seccomp is None else (seccomp,),
                           user=None if owner is None else owner[0],
                           group=None if owner is None else owner[1],
                           extra_groups=None if owner is None else [])  # fmt: skip
        finally:
            if seccomp is not None:
                os.close(seccomp)

    return run


def _without_cgroups(box: Sandbox) -> Callable[[], object]:
    run = _exec(box)

    def without() -> None:
        names = vars(_launch)  # where the launcher looks the probe up
        names["host_support"] = lambda: CgroupSupport({})
        try:
            run()
        finally:
            names["host_support"] = host_support

    return without


def _without_spawner(box: Sandbox) -> Callable[[], object]:
    box._lease = lambda *args: None  # type: ignore[method-assign]
    return _exec(box)


def _wait_for_spawner(box: Sandbox) -> None:
    """Run ``true`` until a command went through ``box``'s spawner (started in the
    background by the first command; none where the harness is not root)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        box.exec(["true"])
        spawner = _spawner(box)
        if spawner is None or not spawner._pending:
            return
        time.sleep(0.05)
    print("warning: the spawner did not become ready; the backend ran its per-command path")


def _spawner(box: Sandbox | None) -> Spawner | None:
    """``box``'s spawner, if it has one now (bwrap with a root harness)."""
    spawner = getattr(None if box is None else box._slot, "_spawner", None)
    return spawner if isinstance(spawner, Spawner) else None


def _spawner_cpu(box: Sandbox | None) -> float:
    """CPU seconds of ``box``'s spawner and of everything it started and reaped."""
    spawner = _spawner(box)
    if spawner is None:
        return 0.0
    try:
        fields = Path(f"/proc/{spawner.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _spread(values: list[float]) -> tuple[float, float, float]:
    """(median, 10th percentile, 90th percentile)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    deciles = statistics.quantiles(values, n=10)
    return statistics.median(values), deciles[0], deciles[-1]


def _summary(label: str, wall: list[float], cpu: list[float], tree: list[float]) -> str:
    w, w10, w90 = (1000 * v for v in _spread(wall))
    c, c10, c90 = (1000 * v for v in _spread(cpu))
    every = f"   all cpu median {1000 * statistics.median(tree):6.2f} ms" if tree else ""
    return (
        f"{label:<19} wall median {w:7.2f} ms (p10 {w10:6.2f}, p90 {w90:6.2f})   "
        f"cpu median {c:6.2f} ms (p10 {c10:6.2f}, p90 {c90:6.2f}){every}"
    )


def _machine() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{os.cpu_count()} cores, load {one:.1f} {five:.1f} {fifteen:.1f}"


def main(rounds: int, files: int, breakdown: bool = False, pause: float = 0.0,
         block: int = 10) -> None:  # fmt: skip
    """Measure and print; ``rounds`` interleaved blocks of ``block`` calls per variant."""
    print(f"toolproof sandbox benchmark: `true`, {rounds} interleaved rounds of {block} calls, "
          f"{files} files in the workspace, pause {pause} s; {_machine()}, "
          f"euid {os.geteuid()}, python {sys.version.split()[0]}")  # fmt: skip
    reason = get_backend("bwrap").unavailable_reason()
    if reason is not None:
        print(f"bwrap unusable here: {reason}")
        return
    clock = _TreeClock()
    try:
        _measure(rounds, files, breakdown, pause, block, clock)
    finally:
        clock.close()


def _measure(rounds: int, files: int, breakdown: bool, pause: float, block: int,
             clock: _TreeClock) -> None:  # fmt: skip
    """The interleaved runs and the summary (see ``main``)."""
    with tempfile.TemporaryDirectory(prefix="toolproof-bench-") as tmp:
        root = Path(tmp)
        root.chmod(0o711)
        names = ("bare", "box", "proc", "etc", "user", "nocg", "nosp")
        bare_ws, box_ws, proc_ws, etc, user_ws, nocg_ws, nosp_ws = (root / n for n in names)
        for ws in (bare_ws, box_ws, proc_ws, user_ws, nocg_ws, nosp_ws):
            ws.mkdir()
            for index in range(files):
                (ws / f"f{index}.txt").write_text("x" * 100)
        etc.mkdir()
        _write_etc(etc)
        owner = sandbox_owner()
        if owner is not None:
            os.chown(user_ws, *owner)
        bwrap = get_backend("bwrap")
        with (
            bwrap(box_ws) as box,
            get_backend("process")(proc_ws) as plain,
            bwrap(nocg_ws) as nocg,
            bwrap(nosp_ws) as nosp,
        ):
            variants: dict[str, tuple[Callable[[], object], Sandbox | None]] = {
                "fork/exec": (lambda: subprocess.run(["true"], check=True), None),
                "bare bwrap": (_bare_bwrap(bare_ws, etc), None),
                "process backend": (_exec(plain), None),
                "bwrap backend": (_exec(box), box),
            }
            if breakdown:
                variants["bwrap as user"] = (_user_bwrap(user_ws, etc), None)
                variants["backend, no cgroup"] = (_without_cgroups(nocg), None)
                variants["backend, no spawner"] = (_without_spawner(nosp), None)
            wall: dict[str, list[float]] = {name: [] for name in variants}
            cpu: dict[str, list[float]] = {name: [] for name in variants}
            tree: dict[str, list[float]] = {name: [] for name in variants}
            _wait_for_spawner(box)
            for warm in range(rounds + 1):  # the first round warms caches and probes
                for name, (run, spawner_of) in variants.items():
                    c0, s0, t0_all = _cpu(), _spawner_cpu(spawner_of), clock.seconds()
                    for _ in range(block):
                        if pause:
                            time.sleep(pause)
                        t0 = time.perf_counter()
                        run()
                        if warm:
                            wall[name].append(time.perf_counter() - t0)
                    if warm:
                        spent = _cpu() - c0 + _spawner_cpu(spawner_of) - s0
                        cpu[name].append(spent / block)
                        t1_all = clock.seconds()
                        if t0_all is not None and t1_all is not None:
                            tree[name].append((t1_all - t0_all) / block)
            helped = getattr(_spawner(box), "helped", None)  # None: no spawner (or an older one)
    for name in variants:
        print(_summary(name, wall[name], cpu[name], tree[name]))
    ratio = statistics.median(wall["bwrap backend"]) / statistics.median(wall["bare bwrap"])
    cpu_ratio = statistics.median(cpu["bwrap backend"]) / statistics.median(cpu["bare bwrap"])
    total = sum(cpu["bwrap backend"]) / sum(cpu["bare bwrap"])
    print(f"bwrap backend / bare bwrap: cpu {cpu_ratio:.2f}x (medians; {total:.2f}x of the "
          f"totals; target <= 1.5x), wall {ratio:.2f}x")  # fmt: skip
    if tree["bare bwrap"]:
        all_ratio = statistics.median(tree["bwrap backend"]) / statistics.median(tree["bare bwrap"])
        all_total = sum(tree["bwrap backend"]) / sum(tree["bare bwrap"])
        print(f"  with every process's CPU (cpuacct; the namespaces' teardown included): "
              f"{all_ratio:.2f}x (medians; {all_total:.2f}x of the totals)")  # fmt: skip
    print(f"commands started with no Python in the child (C spawner, exec helper): {helped}")
    print(f"at the end: {_machine()}")


def _exec(box: Sandbox) -> Callable[[], object]:
    def run() -> None:
        result = box.exec(["true"])
        if not result.ok:
            raise SystemExit(f"{box.name}: {result}")

    return run


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=30)
    parser.add_argument("--block", type=int, default=10, help="calls per CPU sample")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--breakdown", action="store_true", help="two diagnostic variants")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds idle before each call")
    args = parser.parse_args()
    main(args.rounds, args.files, args.breakdown, args.pause, args.block)
