"""Per-command cost of the hardened bwrap sandbox against a bare bwrap call and fork/exec.

Runs ``true`` through, interleaved (A B C D A B C D ...) so that load changes hit
every variant alike:

* ``fork/exec``: ``subprocess.run(["true"])``, the floor;
* ``bare bwrap``: the same bwrap command line the backend builds (same namespaces,
  binds, generated /etc), but no cgroup, no rlimits, no seccomp filter, no
  capability drop and no uid drop, started directly by the harness;
* ``process backend``: limits and clean-up without isolation;
* ``bwrap backend``: everything a real command pays: the cgroup (when root: the
  sandbox's spawner, moved into the sandbox cgroup once, forks the command there;
  see ``_spawner``), the start as the sandbox user, the seccomp filter, the
  rlimits, the output pump, the workspace owner walk and the workspace size check.

With ``--breakdown``, three more variants show where the difference goes:

* ``bwrap as user``: bare bwrap started as the sandbox user with the seccomp filter
  and ``--cap-drop ALL`` (what the kernel charges for the guarantees inside bwrap);
* ``backend, no cgroup``: the bwrap backend with cgroups switched off for the run
  (never a configuration to use: only to price the cgroup);
* ``backend, no spawner``: the bwrap backend on its per-command path (a fresh
  cgroup per command, the command moved into it behind a gate): what a command
  pays when its sandbox's spawner is busy with another one, and what every
  command paid before the spawner.

Prints, per variant, the median wall time with its spread (10th-90th percentile),
the median CPU time (harness plus its children) and the mean CPU time, which for
the backend also counts the spawner and the commands it forked (``/proc`` ticks of
10 ms, so only the mean over all rounds is exact enough), and the ratio of the
bwrap backend to bare bwrap (target: at most 1.5x). The workspace holds ``--files`` small files
(default 200) so the owner walk and size check have something to do.

``--pause S`` sleeps S seconds before each call, as an agent thinking between commands
does: the cgroup v1 attach then waits for a full RCU grace period, which back-to-back
calls mostly skip.

Run: ``python benchmarks/bench_sandbox.py [rounds] [--files N] [--breakdown] [--pause S]``
(default 60 rounds).
No assertions.
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
from collections.abc import Callable
from pathlib import Path

from toolproof.sandbox import Sandbox, _base, get_backend
from toolproof.sandbox._bwrap import _PATH, _probe, _write_etc, build_argv, seccomp_pipe
from toolproof.sandbox._cgroup import CgroupSupport, host_support
from toolproof.sandbox._identity import sandbox_owner


def _cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime


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
        _base.host_support = lambda: CgroupSupport({})
        try:
            run()
        finally:
            _base.host_support = host_support

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
        spawner = None if box._slot is None else box._slot._spawner
        if spawner is None or not spawner._pending:
            return
        time.sleep(0.05)
    print("warning: the spawner did not become ready; the backend ran its per-command path")


def _spawner_cpu(box: Sandbox) -> float:
    """CPU seconds of ``box``'s spawner and of the commands it forked and reaped."""
    slot = box._slot
    spawner = None if slot is None else slot._spawner
    if spawner is None:
        return 0.0
    try:
        fields = Path(f"/proc/{spawner.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _summary(label: str, wall: list[float], cpu: list[float], extra: float = 0.0) -> str:
    deciles = statistics.quantiles(wall, n=10)
    mean = (sum(cpu) + extra) / len(cpu)
    return (
        f"{label:<19} wall median {1000 * statistics.median(wall):7.2f} ms "
        f"(p10 {1000 * deciles[0]:6.2f}, p90 {1000 * deciles[-1]:6.2f})   "
        f"cpu median {1000 * statistics.median(cpu):6.2f} ms, mean {1000 * mean:6.2f} ms"
    )


def main(rounds: int, files: int, breakdown: bool = False, pause: float = 0.0) -> None:
    """Measure and print; ``rounds`` interleaved samples per variant."""
    load = os.getloadavg()[0]
    print(f"toolproof sandbox benchmark: `true`, {rounds} interleaved rounds, {files} files in "
          f"the workspace, pause {pause} s; {os.cpu_count()} cores, load {load:.1f}, "
          f"euid {os.geteuid()}, python {sys.version.split()[0]}")  # fmt: skip
    reason = get_backend("bwrap").unavailable_reason()
    if reason is not None:
        print(f"bwrap unusable here: {reason}")
        return
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
            variants: dict[str, Callable[[], object]] = {
                "fork/exec": lambda: subprocess.run(["true"], check=True),
                "bare bwrap": _bare_bwrap(bare_ws, etc),
                "process backend": _exec(plain),
                "bwrap backend": _exec(box),
            }
            if breakdown:
                variants["bwrap as user"] = _user_bwrap(user_ws, etc)
                variants["backend, no cgroup"] = _without_cgroups(nocg)
                variants["backend, no spawner"] = _without_spawner(nosp)
            wall: dict[str, list[float]] = {name: [] for name in variants}
            cpu: dict[str, list[float]] = {name: [] for name in variants}
            _wait_for_spawner(box)
            spawner_cpu = 0.0
            for warm in range(rounds + 3):
                if warm == 3:
                    spawner_cpu = _spawner_cpu(box)
                for name, run in variants.items():
                    if pause:
                        time.sleep(pause)
                    c0, t0 = _cpu(), time.perf_counter()
                    run()
                    t1, c1 = time.perf_counter(), _cpu()
                    if warm >= 3:  # the first rounds warm caches and probes
                        wall[name].append(t1 - t0)
                        cpu[name].append(c1 - c0)
            spawner_cpu = _spawner_cpu(box) - spawner_cpu
    for name in variants:
        print(_summary(name, wall[name], cpu[name], spawner_cpu if name == "bwrap backend" else 0))
    ratio = statistics.median(wall["bwrap backend"]) / statistics.median(wall["bare bwrap"])
    box_cpu = (sum(cpu["bwrap backend"]) + spawner_cpu) / rounds
    cpu_ratio = box_cpu / (sum(cpu["bare bwrap"]) / rounds)
    print(f"bwrap backend / bare bwrap: wall {ratio:.2f}x (target <= 1.5x), "
          f"cpu (means, spawner included) {cpu_ratio:.2f}x")  # fmt: skip
    print(f"load at the end: {os.getloadavg()[0]:.1f}")


def _exec(box: Sandbox) -> Callable[[], object]:
    def run() -> None:
        result = box.exec(["true"])
        if not result.ok:
            raise SystemExit(f"{box.name}: {result}")

    return run


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=60)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--breakdown", action="store_true", help="two diagnostic variants")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds idle before each call")
    args = parser.parse_args()
    main(args.rounds, args.files, args.breakdown, args.pause)
