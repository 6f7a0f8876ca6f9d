"""Per-command cgroups: detection on fake trees, the join wrapper, and the real host."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits
from toolproof.sandbox._cgroup import (
    JOIN_FAILED,
    RLIMIT_FAILED,
    CgroupGate,
    CgroupSupport,
    CommandCgroup,
    _remove_stale,
    detect,
    host_support,
    join_argv,
)
from toolproof.sandbox.bwrap._sandbox_cgroup import SandboxCgroup

V1_MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw
37 30 0:33 / {root}/pids rw,relatime - cgroup cgroup rw,pids
38 30 0:34 / {root}/memory rw,relatime - cgroup cgroup rw,memory
39 30 0:35 / {root}/cpu rw,relatime - cgroup cgroup rw,cpu
40 30 0:36 / {root}/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_SELF = "8:pids:/\n4:memory:/jobs/42\n1:cpu:/\n0::/\n"


def test_detect_v1_uses_own_cgroup_per_controller(tmp_path: Path) -> None:
    (tmp_path / "pids").mkdir()
    (tmp_path / "memory" / "jobs" / "42").mkdir(parents=True)
    (tmp_path / "unified").mkdir()  # cgroup2 without controllers: ignored
    support = detect(V1_MOUNTINFO.format(root=tmp_path), V1_SELF)
    assert support.parents == {
        "pids": (1, tmp_path / "pids"),
        "memory": (1, tmp_path / "memory" / "jobs" / "42"),
    }


def test_detect_v2_enables_controllers_in_subtree(tmp_path: Path) -> None:
    own = tmp_path / "user.slice"
    own.mkdir()
    (own / "cgroup.controllers").write_text("cpu memory pids\n")
    (own / "cgroup.subtree_control").write_text("pids\n")
    mountinfo = f"30 25 0:26 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    support = detect(mountinfo, "0::/user.slice\n")
    # On a fake tree the "+memory" write replaces the file, as the kernel would add it.
    assert support.parents["pids"] == (2, own)
    assert support.parents["memory"] == (2, own)


def test_detect_without_cgroups() -> None:
    assert detect("", "") == CgroupSupport({})
    assert not CgroupSupport({}).has("pids")


def test_command_cgroup_writes_limits_and_reads_events(tmp_path: Path) -> None:
    v1 = CgroupSupport({"pids": (1, tmp_path / "p"), "memory": (1, tmp_path / "m")})
    (tmp_path / "p").mkdir()
    (tmp_path / "m").mkdir()
    group = CommandCgroup(v1, pids=9, memory_mb=2)
    (pids_dir,) = [p for p in (tmp_path / "p").iterdir()]
    (mem_dir,) = [p for p in (tmp_path / "m").iterdir()]
    assert (pids_dir / "pids.max").read_text() == "9"
    assert (mem_dir / "memory.limit_in_bytes").read_text() == str(2 * 1024 * 1024)
    assert group.procs_files == sorted([pids_dir / "cgroup.procs", mem_dir / "cgroup.procs"])
    assert not group.pids_hit() and not group.oom_killed()
    (pids_dir / "pids.events").write_text("max 3\n")
    (mem_dir / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert group.pids_hit() and group.oom_killed()
    for path in (pids_dir, mem_dir):  # a real cgroupfs has no files to delete
        for child in path.iterdir():
            child.unlink()
    group.remove()
    assert not pids_dir.exists() and not mem_dir.exists()


def test_command_cgroup_v2_events(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    group = CommandCgroup(CgroupSupport({"memory": (2, tmp_path / "c")}), pids=5, memory_mb=1)
    assert not group.has("pids") and group.has("memory")
    (mem_dir,) = list((tmp_path / "c").iterdir())
    assert (mem_dir / "memory.max").read_text() == str(1024 * 1024)
    assert (mem_dir / "memory.swap.max").read_text() == "0"
    (mem_dir / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert group.oom_killed()


def test_sandbox_cgroup_counts_each_command_and_spares_the_helper(tmp_path: Path) -> None:
    """Reused by every command: events are re-based, the helper is never killed."""
    (tmp_path / "c").mkdir()
    support = CgroupSupport({"pids": (2, tmp_path / "c"), "memory": (2, tmp_path / "c")})
    group = SandboxCgroup(support, pids=10, memory_mb=4)
    (path,) = list((tmp_path / "c").iterdir())
    (path / "cgroup.kill").write_text("")
    (path / "pids.events").write_text("max 2\n")
    (path / "memory.events").write_text("oom_kill 1\n")
    assert group.begin(10, 8)  # a new memory limit, the counters taken as they are
    assert (path / "pids.max").read_text() == "11"  # the helper counts too
    assert (path / "memory.max").read_text() == str(8 * 1024 * 1024)
    assert not group.pids_hit() and not group.oom_killed()
    (path / "pids.events").write_text("max 3\n")
    (path / "memory.events").write_text("oom_kill 2\n")
    assert group.pids_hit() and group.oom_killed()
    helper = subprocess.Popen(["sleep", "60"])
    try:
        group.keep = helper.pid
        (path / "cgroup.procs").write_text(f"{helper.pid}\n")
        assert group.pids() == set()
        assert group.kill_all(timeout_s=1)
        assert helper.poll() is None and (path / "cgroup.kill").read_text() == ""
        assert (path / "pids.max").read_text().startswith("0")  # forks frozen (no truncation)
        assert group.begin(10, 8) and (path / "pids.max").read_text() == "11"
        assert not group.begin(None, 8)  # a controller would be missing: not reusable
    finally:
        helper.kill()
        helper.wait()
    for child in path.iterdir():
        child.unlink()
    group.keep = None
    group.remove()


def test_join_argv_writes_pid_before_exec(tmp_path: Path) -> None:
    procs = tmp_path / "cgroup.procs"
    done = subprocess.run(
        join_argv([procs], ["/bin/sh", "-c", "echo $$"]), capture_output=True, text=True
    )
    assert done.returncode == 0
    assert procs.read_text().strip() == done.stdout.strip()  # exec kept the pid


def test_join_argv_failure_is_reported(tmp_path: Path) -> None:
    done = subprocess.run(
        join_argv([tmp_path / "missing" / "cgroup.procs"], ["true"]), capture_output=True
    )
    assert done.returncode == 125
    assert done.stderr.startswith(JOIN_FAILED)


def test_real_pids_cgroup_limits_and_kills() -> None:
    support = host_support()
    if not support.has("pids"):
        pytest.skip("no writable pids cgroup on this host")
    group = CommandCgroup(support, pids=4, memory_mb=None)
    try:
        proc = subprocess.Popen(
            join_argv(group.procs_files, ["/bin/sh", "-c", "for i in 1 2 3 4 5 6; do "
                                          "sleep 1000 & done; wait"]),
            stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not group.pids_hit() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.pids_hit()
        assert 0 < len(group.pids()) <= 4
        assert group.kill_all()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
    finally:
        group.remove()
    assert group.procs_files == []


def test_stale_cgroups_of_dead_harnesses_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / "toolproof-999999999-abcdef"  # above any pid_max
    mine = tmp_path / f"toolproof-{os.getpid()}-abcdef"
    other = tmp_path / "unrelated"
    for path in (dead, mine, other):
        path.mkdir()
    _remove_stale(tmp_path)
    assert not dead.exists() and mine.exists() and other.exists()


def test_kill_all_freezes_forks_so_a_forking_tree_dies_at_once() -> None:
    support = host_support()
    if not support.has("pids"):
        pytest.skip("no writable pids cgroup on this host")
    group = CommandCgroup(support, pids=64, memory_mb=None)
    # Every process forks replacements as fast as it can and ignores SIGTERM.
    forker = "trap '' TERM; f() { while :; do (f) & sleep 0.01; done; }; f"
    try:
        proc = subprocess.Popen(
            join_argv(group.procs_files, ["/bin/sh", "-c", forker]),
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while len(group.pids()) < 16 and time.monotonic() < deadline:
            time.sleep(0.05)
        hit_before = group.pids_hit()
        # Emptied within kill_all's own deadline: the forks were stopped, not outrun
        # (no wall-clock bound here: on a busy machine dying takes what it takes).
        assert group.kill_all()
        proc.wait(timeout=30)
        assert group.pids_hit() == hit_before  # refusals caused by the freeze do not count
    finally:
        group.remove()
    assert group.procs_files == []


@pytest.mark.parametrize("release", [True, False])
def test_gate_holds_the_command_until_released(release: bool, tmp_path: Path) -> None:
    with CgroupGate((os.getuid(), os.getgid())) as gate:
        proc = subprocess.Popen(
            gate.argv(["echo", "ran"]),
            pass_fds=(gate.fd,),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.poll() is None  # held: nothing ran yet
        # No cgroup files to write: released at once; a missing file: the join fails.
        gate.release([] if release else [tmp_path / "gone" / "cgroup.procs"], proc.pid)
    out, err = proc.communicate(timeout=30)
    if release:
        assert proc.returncode == 0 and out == b"ran\n"
    else:
        assert proc.returncode == 125 and out == b"" and err.startswith(JOIN_FAILED)


def test_gate_sets_the_rlimits_before_the_command(tmp_path: Path) -> None:
    script = ResourceLimits(cpu_s=5, file_size_mb=1).ulimit_script(nproc=False, address_space=False)
    with CgroupGate((os.getuid(), os.getgid())) as gate:
        proc = subprocess.Popen(
            gate.argv(["/bin/sh", "-c", "ulimit -S -t; ulimit -H -t; ulimit -f"], script),
            pass_fds=(gate.fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        gate.release([], proc.pid)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out.split() == [b"5", b"6", b"2048"]


@pytest.mark.parametrize("hostile", ["ulimit -H -t 1 && ulimit -S -t 5", "false", "exit 0"])
def test_rlimits_that_cannot_be_set_stop_the_command(hostile: str, tmp_path: Path) -> None:
    """A limit the shell refuses (soft above hard) never lets the command run unlimited."""
    marker = tmp_path / "ran"
    argv = join_argv([], ["touch", str(marker)], hostile)
    run = subprocess.run(argv, capture_output=True, timeout=30)
    assert not marker.exists()
    if hostile != "exit 0":  # "exit 0" ends the shell itself: still nothing ran
        assert run.returncode == 125 and run.stderr.startswith(RLIMIT_FAILED)
