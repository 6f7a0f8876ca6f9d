"""The per-sandbox spawner: commands born in the sandbox's cgroup, nothing weakened.

These need a root harness with a writable cgroup (as CI runs); elsewhere the
bwrap backend keeps the per-command path and they skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits, Sandbox, SandboxError, get_backend
from toolproof.sandbox._cgroup import host_support
from toolproof.sandbox.bwrap import _spawner as spawner_module
from toolproof.sandbox.bwrap._exec_helper import exec_helper
from toolproof.sandbox.bwrap._spawner import Spawner, SpawnerBroken, SpawnerLost
from toolproof.spec import SandboxSpec, WorldSpec
from toolproof.tools import ToolContext, ToolCrash, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits.shell import SETTINGS_KEY, episode_shell
from toolproof.trajectory import ToolCall
from toolproof.worlds import World

SMALL = ResourceLimits(wall_s=20, cpu_s=10, memory_mb=256, pids=32, workspace_mb=16)


@pytest.fixture
def box(workspace: Path) -> Iterator[Sandbox]:
    """A bwrap sandbox whose commands go through its spawner."""
    cls = get_backend("bwrap")
    reason = cls.unavailable_reason()
    if reason is not None:
        pytest.skip(f"bwrap unusable here: {reason}")
    if os.geteuid() != 0 or not host_support().parents:
        pytest.skip("the spawner needs a root harness with a writable cgroup")
    with cls(workspace, SMALL) as sandbox:
        _warm(sandbox)
        yield sandbox
    for _, parent in host_support().parents.values():  # the sandbox cgroup went too
        assert list(parent.glob(f"toolproof-{os.getpid()}-*")) == []


def _warm(box: Sandbox) -> None:
    """Run commands until one went through the spawner (its start-up is never waited for)."""
    deadline = time.monotonic() + 60
    while True:
        assert box.exec("true").ok
        slot = box._slot
        if slot is not None and slot._spawner is not None and not slot._spawner._pending:
            return
        assert time.monotonic() < deadline, "the spawner never became ready"
        time.sleep(0.05)


def _spawner(box: Sandbox) -> Spawner:
    slot = box._slot
    assert slot is not None and slot._spawner is not None, "no spawner was started"
    return slot._spawner


def _wait_for(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_command_is_born_in_the_sandbox_cgroup(
    box: Sandbox, leftovers: Callable[[str], list[int]]
) -> None:
    spawner = _spawner(box)
    dirs = {path.parent for path in spawner.group.procs_files}
    token = "5550123"
    worker = threading.Thread(target=box.exec, args=(f"sleep {token}",), kwargs={"limits":
                              ResourceLimits(wall_s=3, memory_mb=256, pids=32)})  # fmt: skip
    worker.start()
    try:
        _wait_for(lambda: leftovers(f"sleep {token}"), "the command to start")
        for pid in leftovers(f"sleep {token}"):  # bwrap, its reaper, the command
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            for directory in dirs:  # its pids and memory cgroups are the sandbox's
                assert any(line.endswith("/" + directory.name) for line in lines), lines
        for procs in spawner.group.procs_files:  # the helper is there, left alone
            assert str(spawner.proc.pid) in procs.read_text().split()
        assert spawner.proc.pid not in spawner.group.pids()
    finally:
        worker.join(timeout=60)
    assert _spawner(box) is spawner  # the same helper (and cgroup) serves the next one
    assert leftovers(f"sleep {token}") == []


def test_exit_codes_signals_stdin_and_output_are_exact(box: Sandbox) -> None:
    assert box.exec("echo out; echo err >&2; exit 7").exit_code == 7
    result = box.exec("echo out; echo err >&2; exit 7")
    assert (result.stdout, result.stderr) == ("out\n", "err\n")
    assert box.exec("kill -9 $$").exit_code == 128 + 9
    assert box.exec("kill -TERM $$").exit_code == 128 + 15
    assert box.exec("cat", stdin="abc" * 1000).stdout == "abc" * 1000
    flood = box.exec("yes", limits=ResourceLimits(output_bytes=5000))
    assert flood.limit_hit == "output" and len(flood.stdout) == 5000
    assert box.exec("nosuchprogram-42").exit_code == 127


def test_the_command_runs_unprivileged_with_its_rlimits(box: Sandbox) -> None:
    script = "cat /proc/self/status | grep -E '^(Uid|Gid|Groups|CapEff|NoNewPrivs|Seccomp):'"
    status = box.exec(script).stdout
    assert "CapEff:\t0000000000000000" in status and "NoNewPrivs:\t1" in status
    assert "Seccomp:\t2" in status
    limits = box.exec("ulimit -S -t; ulimit -H -t; ulimit -f").stdout.split()
    assert limits == ["10", "11", str(64 * 2048)]
    # Seen from the host, the command's processes are the unprivileged sandbox user.
    assert box.exec("grep -E '^oom_score_adj' /proc/self/status; cat /proc/self/oom_score_adj")\
        .stdout.split()[-1] == "0"  # fmt: skip


@pytest.mark.parametrize("way", ["native", "exec helper", "forked"])
def test_every_way_of_starting_a_command_gives_the_same_command(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    """The C spawner (a fork of a small C process), the Python spawner through the exec
    helper (posix_spawn), or the Python spawner's fork with Python in the child."""
    if get_backend("bwrap").unavailable_reason() is not None:
        pytest.skip("bwrap unusable here")
    if os.geteuid() != 0 or not host_support().parents:
        pytest.skip("the spawner needs a root harness with a writable cgroup")
    if way != "forked" and exec_helper() is None:
        pytest.skip("nothing built here (no C compiler)")
    if way != "native":
        monkeypatch.setattr(spawner_module, "native_spawner", lambda: None)
    if way == "forked":
        monkeypatch.setattr(spawner_module, "exec_helper", lambda: None)
    helped = way != "forked"
    with get_backend("bwrap")(workspace, SMALL) as sandbox:
        _warm(sandbox)
        before = _spawner(sandbox).helped
        script = (
            "grep -E '^(Uid|Gid|Groups|CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
            "cat /proc/self/oom_score_adj; ulimit -St; ulimit -Ht; ulimit -f; ls /proc/self/fd"
        )
        seen = sandbox.exec(script, stdin="in").stdout  # fmt: skip
        assert (_spawner(sandbox).helped > before) is helped
        native = "/spawner-" in str(_spawner(sandbox).proc.args)  # its built file's name
        assert native is (way == "native")
    assert "Uid:\t1000\t1000\t1000\t1000" in seen and "Groups:\t \n" in seen
    assert "CapEff:\t0000000000000000" in seen and "NoNewPrivs:\t1" in seen
    assert "Seccomp:\t2" in seen
    assert seen.split("\n", 6)[6].split() == ["0", "10", "11", str(64 * 2048), "0", "1", "2", "3"]


def test_a_c_spawner_that_cannot_be_run_gives_way_to_the_python_one(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A built C spawner that cannot be executed (a noexec temporary directory, say)."""
    if get_backend("bwrap").unavailable_reason() is not None:
        pytest.skip("bwrap unusable here")
    if os.geteuid() != 0 or not host_support().parents:
        pytest.skip("the spawner needs a root harness with a writable cgroup")
    unrunnable = tmp_path / "spawner-0"
    unrunnable.write_bytes(b"\x7fELF not a program")
    unrunnable.chmod(0o644)  # no execute bit: exec fails with EACCES, as on noexec
    monkeypatch.setattr(spawner_module, "native_spawner", lambda: str(unrunnable))
    monkeypatch.setattr(spawner_module, "_NATIVE_FAILED", False)
    with get_backend("bwrap")(workspace, SMALL) as sandbox:
        _warm(sandbox)
        assert "_spawner_main.py" in str(_spawner(sandbox).proc.args)
        assert sandbox.exec("echo through python").stdout == "through python\n"
    assert spawner_module._NATIVE_FAILED  # not tried again in this process


def test_the_command_cannot_find_the_spawner(box: Sandbox) -> None:
    spawner = _spawner(box)
    inode = os.fstat(spawner.sock.fileno()).st_ino
    probe = (
        "import os\n"
        "links = []\n"
        "for pid in os.listdir('/proc'):\n"
        "    if not pid.isdigit(): continue\n"
        "    try: fds = os.listdir(f'/proc/{pid}/fd')\n"
        "    except OSError: continue\n"
        "    for fd in fds:\n"
        "        try: links.append(os.readlink(f'/proc/{pid}/fd/{fd}'))\n"
        "        except OSError: pass\n"
        "print(sorted(set(l for l in links if l.startswith('socket:'))))\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
    )
    result = box.exec(["python3", "-c", probe])
    sockets, pids = result.stdout.splitlines()
    assert sockets == "[]" and f"[{inode}]" not in result.stdout
    assert str(spawner.proc.pid) not in pids.strip("[]").split(", ") or spawner.proc.pid < 4
    # Its own descriptors are only stdin, stdout and stderr (and the one `ls` opens).
    assert box.exec("ls /proc/self/fd").stdout.split() == ["0", "1", "2", "3"]


def test_a_fork_bomb_is_held_and_the_next_command_runs(box: Sandbox) -> None:
    bomb = box.exec("b() { b | b & }; b; sleep 5", limits=ResourceLimits(wall_s=15, pids=16))
    assert bomb.limit_hit == "pids" and not bomb.ok
    after = box.exec("for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done; wait; echo ok")
    assert after.ok and after.limit_hit is None and after.stdout == "ok\n"


def test_daemons_are_killed_after_each_command(
    box: Sandbox, leftovers: Callable[[str], list[int]]
) -> None:
    token = "4242421"
    result = box.exec(f"setsid sh -c 'sleep {token}' >/dev/null 2>&1 & echo started")
    assert result.ok and result.stdout == "started\n"
    assert leftovers(f"sleep {token}") == []
    assert _spawner(box).group.pids() == set()  # the helper only


def test_memory_limit_changes_between_commands(box: Sandbox) -> None:
    hog = ["python3", "-c", "b = bytearray(200 * 1024 * 1024); print(len(b))"]
    assert box.exec(hog, limits=ResourceLimits(memory_mb=64)).limit_hit == "memory"
    assert box.exec(hog, limits=ResourceLimits(memory_mb=512)).ok
    assert box.exec(hog, limits=ResourceLimits(memory_mb=64)).limit_hit == "memory"


def test_a_one_command_sandbox_never_waits_for_the_spawner(workspace: Path) -> None:
    cls = get_backend("bwrap")
    if cls.unavailable_reason() is not None or os.geteuid() != 0 or not host_support().parents:
        pytest.skip("the spawner needs bwrap and a root harness with a writable cgroup")
    with cls(workspace, SMALL) as sandbox:
        assert sandbox.exec("echo first").stdout == "first\n"  # the per-command path
        slot = sandbox._slot
        assert slot is not None and slot._spawner is not None  # starting meanwhile


def test_tmpfs_pages_left_charged_get_a_fresh_cgroup(box: Sandbox) -> None:
    """Workspace files a command wrote are not charged to the next command's memory."""
    first = _spawner(box)
    assert box.exec("head -c 1000 /dev/zero > small").ok
    assert _spawner(box) is first
    assert box.exec("head -c 8000000 /dev/zero > big").ok
    assert box.exec("true").ok
    assert _spawner(box) is not first and _spawner(box).group.shmem_bytes() < 1024 * 1024


def test_commands_at_the_same_time_both_run(box: Sandbox) -> None:
    results: list[str] = []
    script = "sleep 1; echo done"
    threads = [threading.Thread(target=lambda: results.append(box.exec(script).stdout))
               for _ in range(3)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == ["done\n"] * 3


def test_malformed_requests_never_crash_the_harness(box: Sandbox) -> None:
    spawner = _spawner(box)
    requests: list[dict[str, object]] = [
        {"argv": []},
        {"argv": ["true"], "env": {}, "cwd": "/", "uid": 0, "gid": 0, "rlimits": [], "fds": []},
        {"argv": ["true"], "env": {"A": 1}, "cwd": "/", "uid": 5, "gid": 5, "rlimits": [],
         "fds": []},
        {"argv": ["true"], "env": {}, "cwd": "/", "uid": 5, "gid": 5, "rlimits": [["x"]],
         "fds": []},
        {"argv": ["true"], "env": {}, "cwd": "/", "uid": 5, "gid": 5, "rlimits": [],
         "fds": [1, 1]},
        {"argv": ["true"], "env": {}, "cwd": "/", "uid": 5, "gid": 5, "rlimits": [], "fds": [1]},
    ]  # fmt: skip
    for bad in requests:
        spawner.send(bad, [])
        reply = spawner.receive(30)
        assert isinstance(reply.get("error"), str), (bad, reply)
    spawner.sock.sendall(b"\x00\x00\x00\x05[1,2")  # not JSON once complete
    spawner.sock.sendall(b"]")
    assert "bad request" in str(spawner.receive(30).get("error"))
    assert box.exec("echo still").stdout == "still\n"
    spawner.sock.sendall(b"\xff\xff\xff\xff")  # a frame the helper refuses: it stops
    with pytest.raises(SpawnerBroken):
        spawner.receive(30)
    _wait_for(lambda: spawner.proc.poll() is not None, "the helper to exit")
    assert box.exec("echo again").stdout == "again\n"  # the per-command path meanwhile
    assert _spawner(box) is not spawner  # a fresh one is starting
    _warm(box)
    assert box.exec("echo through it").stdout == "through it\n"


def test_a_command_no_program_can_be_given_is_refused_before_the_spawner(box: Sandbox) -> None:
    """A NUL byte or a lone surrogate: the spawner would answer "bad request" and be
    discarded; the caller's argument is refused instead, and the same spawner serves
    the next command."""
    spawner = _spawner(box)
    for bad in ("echo a\0b", ["/bin/echo", "a\0b"], "echo \ud800"):
        with pytest.raises(SandboxError, match=r"NUL byte|lone surrogate"):
            box.exec(bad)
    assert box.exec(["printf", "%s", "\udcff"]).stdout == "\ufffd"  # the byte 0xff, passed on
    assert box.exec("echo ok").stdout == "ok\n" and _spawner(box) is spawner


def test_a_killed_spawner_is_replaced(box: Sandbox) -> None:
    spawner = _spawner(box)
    os.kill(spawner.proc.pid, signal.SIGKILL)
    spawner.proc.wait(timeout=30)
    assert box.exec("echo ok").stdout == "ok\n"
    _warm(box)
    assert _spawner(box) is not spawner
    assert box.exec("echo ok").stdout == "ok\n"


_HARNESS = """
import sys, threading, time
from pathlib import Path
from toolproof.sandbox import ResourceLimits, get_backend
box = get_backend("bwrap")(Path(sys.argv[1]), ResourceLimits(wall_s=600))
while box._slot is None or box._slot._spawner is None or box._slot._spawner._pending:
    box.exec("true")  # until a command went through the spawner
    time.sleep(0.05)
print(box._slot._spawner.proc.pid, flush=True)
threading.Thread(target=box.exec, args=("sleep " + sys.argv[2],)).start()
time.sleep(600)
"""


def test_the_spawner_and_its_command_die_with_the_harness(
    box: Sandbox, tmp_path: Path, leftovers: Callable[[str], list[int]]
) -> None:
    token = "7770777"
    workspace = tmp_path / "other"
    workspace.mkdir()
    src = str(Path(__file__).parents[3] / "src")
    # Its own mount namespace: the workspace tmpfs it mounts goes when it dies.
    harness = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", _HARNESS,
         str(workspace), token], stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": src},
    )  # fmt: skip
    try:
        assert harness.stdout is not None
        spawner_pid = int(harness.stdout.readline())
        _wait_for(lambda: leftovers(f"sleep {token}"), "the command to start")
        os.kill(harness.pid, signal.SIGKILL)  # no clean-up code runs
        harness.wait(timeout=30)
        _wait_for(lambda: not _alive(spawner_pid), "the spawner to exit")
        _wait_for(lambda: not leftovers(f"sleep {token}"), "the command to die")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        if harness.stdout is not None:
            harness.stdout.close()
        for _, parent in host_support().parents.values():  # its empty cgroups
            for stale in parent.glob(f"toolproof-{harness.pid}-*"):
                stale.rmdir()


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # the helper exited
        b"\x7f\xff\xff\xff",  # a frame far above the reply cap
        b"\x00\x00\x00\x03abc",  # not JSON
        b"\x00\x00\x00\x02[]",  # JSON, not an object
        b"\x00\x00\x00\x09{",  # a frame that never completes: timeout
    ],
)
def test_a_garbled_reply_is_a_spawner_failure_not_a_crash(sent: bytes) -> None:
    """Whatever comes back on the socket, the harness gets ``SpawnerBroken``."""
    ours, theirs = socket.socketpair()
    fake = Spawner.__new__(Spawner)  # only the reading half: a sleeper stands in for the helper
    fake.sock, fake._buffer = ours, bytearray()
    fake.proc = subprocess.Popen(["sleep", "60"])
    try:
        theirs.sendall(sent)
        if not sent:
            theirs.close()
        with pytest.raises(SpawnerBroken):
            fake.receive(0.5)
    finally:
        fake.proc.kill()
        fake.proc.wait()
        ours.close()
        theirs.close()


def _nonce() -> str:
    """Digits no other program's command line holds: this test's processes alone match."""
    return f"{secrets.randbelow(10**9):09d}"


def _stall_during_command(
    box: Sandbox, stop: Callable[[int], None], leftovers: Callable[[str], list[int]]
) -> tuple[BaseException | None, object]:
    """Run a command, ``stop`` the spawner (by pid) once it runs; what exec raised or gave."""
    spawner = _spawner(box)
    token = f"sleep 15.{_nonce()}"  # far longer than the stop takes to land
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(box.exec(f"{token}; echo finished", limits=SMALL))
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        _wait_for(lambda: leftovers(token), "the command to start")
        stop(spawner.proc.pid)
        worker.join(timeout=120)
        assert not worker.is_alive(), "exec never returned"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(spawner.proc.pid, signal.SIGKILL)  # a process this test stopped
        worker.join(timeout=60)
    (result,) = outcome
    _wait_for(lambda: spawner.proc.poll() is not None, "the stalled spawner to be reaped")
    assert leftovers(token) == []
    return (result if isinstance(result, BaseException) else None), result


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_stalled_or_dead_spawner_is_the_harnesss_fault(
    box: Sandbox, sig: signal.Signals, leftovers: Callable[[str], list[int]]
) -> None:
    """Not a wall-time hit, nor a hang the agent's tool timeout would be charged with:
    ``SpawnerLost`` (a SandboxError), which the tool gateway turns into an infra error."""
    raised, result = _stall_during_command(box, lambda pid: os.kill(pid, sig), leftovers)
    assert isinstance(raised, SpawnerLost), result
    assert ("stopped" if sig == signal.SIGSTOP else "exited") in str(raised)
    assert box.exec("echo again").stdout == "again\n"  # the sandbox goes on, a new helper


def test_a_spawner_stopped_between_commands_is_passed_over(
    box: Sandbox, leftovers: Callable[[str], list[int]]
) -> None:
    """Nothing was asked of it yet: the command takes the per-command path and runs."""
    spawner = _spawner(box)
    os.kill(spawner.proc.pid, signal.SIGSTOP)
    _wait_for(lambda: spawner.fault() is not None, "the stop to land")  # signals are async
    try:
        result = box.exec("echo fine")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(spawner.proc.pid, signal.SIGKILL)
    assert result.ok and result.stdout == "fine\n"
    _wait_for(lambda: spawner.proc.poll() is not None, "the stopped spawner to be reaped")


def test_through_the_gateway_a_stopped_spawner_is_an_infra_error(
    tmp_path: Path, leftovers: Callable[[str], list[int]]
) -> None:
    """run_command's call ends in ToolCrash (the episode's infra_error), not in the
    agent's "the tool took longer than ..." error."""
    if get_backend("bwrap").unavailable_reason() is not None:
        pytest.skip("bwrap unusable here")
    if os.geteuid() != 0 or not host_support().parents:
        pytest.skip("the spawner needs a root harness with a writable cgroup")
    load_builtin()
    world = World(WorldSpec(files={"a.txt": "a\n"}), tmp_root=tmp_path)
    settings = SandboxSpec(backend="bwrap", wall_s=30)
    ctx = ToolContext(world=world, scratch={SETTINGS_KEY: settings})
    gateway = ToolGateway([registry()["run_command"]], ctx, timeout_s=60)
    token = f"sleep 15.{_nonce()}"  # far longer than the stop takes to land
    try:
        _warm(episode_shell(ctx).box)
        spawner = _spawner(episode_shell(ctx).box)

        def stop_when_running() -> None:
            _wait_for(lambda: leftovers(token), "the command to start")
            os.kill(spawner.proc.pid, signal.SIGSTOP)

        stopper = threading.Thread(target=stop_when_running)
        stopper.start()
        call = ToolCall(id="c1", name="run_command", arguments={"command": token})
        with pytest.raises(ToolCrash, match="spawner"):
            asyncio.run(gateway.call(call))
        stopper.join(timeout=60)
        assert gateway.crash is not None and "stopped" in gateway.crash
    finally:
        world.close()
    assert leftovers(token) == []
