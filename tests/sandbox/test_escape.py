"""The escape suite: one test per attack class against the default (bwrap) backend.

Every test runs a hostile command and asserts that the attack is held and left no
trace on the host. CI runs this as root, the case that matters most: then the
sandbox must not hold host uid 0. Limits are small so every test stays fast.
docs/isolation.md has the table "attack | what holds it | the test that proves it".
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import toolproof
from toolproof.sandbox import SANDBOX_UID, ResourceLimits, Sandbox, _launch, get_backend
from toolproof.sandbox._cgroup import CgroupSupport, host_support

SECRET = "toolproof-escape-secret-6f1d"
SMALL = ResourceLimits(wall_s=20, cpu_s=10, memory_mb=128, pids=32, file_size_mb=None,
                       workspace_mb=16, output_bytes=100_000)  # fmt: skip
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the uid checks need a root harness")


def _mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


@pytest.fixture
def box(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A bwrap sandbox with small limits, a secret in the harness environment, and a
    check afterwards that neither a mount nor a scratch directory was left behind."""
    monkeypatch.setenv("TOOLPROOF_TEST_API_KEY", SECRET)
    cls = get_backend("bwrap")
    reason = cls.unavailable_reason()
    if reason is not None:
        pytest.skip(f"bwrap unusable here: {reason}")
    with cls(workspace, SMALL) as sandbox:
        scratch = sandbox._scratch_dir()
        yield sandbox
    assert str(workspace) + " " not in _mounts() and str(scratch) not in _mounts()
    assert not scratch.exists()
    for _, parent in host_support().parents.values():  # no per-command cgroup left
        assert list(parent.glob(f"toolproof-{os.getpid()}-*")) == []


def _py(code: str) -> list[str]:
    return ["python3", "-c", code]


def test_network_to_an_external_address_is_unreachable(box: Sandbox) -> None:
    result = box.exec(_py(
        "import socket\n"
        "for addr in [('1.1.1.1', 80), ('8.8.8.8', 53), ('2606:4700::1111', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=3); print('CONNECTED', addr)\n"
        "    except OSError as e: print('refused', e.errno)\n"
    ))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "CONNECTED" not in result.stdout and result.stdout.count("refused") == 3


def test_the_hosts_loopback_is_unreachable(box: Sandbox) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        result = box.exec(_py(
            "import socket\n"
            f"try: socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')\n"
            "except OSError as e: print('refused', e)\n"
        ))  # fmt: skip
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever reached the harness's listener
    assert "refused" in result.stdout and "CONNECTED" not in result.stdout


def test_dns_does_not_resolve(box: Sandbox) -> None:
    result = box.exec(_py(
        "import socket\n"
        "try: print('RESOLVED', socket.getaddrinfo('example.com', 80))\n"
        "except OSError as e: print('no dns', e)\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try: s.sendto(b'x', ('8.8.8.8', 53)); print('SENT')\n"
        "except OSError as e: print('no route', e.errno)\n"
    ))  # fmt: skip
    assert "no dns" in result.stdout and "no route" in result.stdout, result.stdout
    assert "RESOLVED" not in result.stdout and "SENT" not in result.stdout


def test_host_files_are_out_of_sight(box: Sandbox) -> None:
    source = Path(toolproof.__file__).resolve().parent
    paths = ["/etc/shadow", "/root", "/home", f"/proc/{os.getpid()}/environ", str(source), "/sys"]
    result = box.exec(["sh", "-c", 'for p in "$@"; do cat "$p" 2>/dev/null || ls "$p" 2>/dev/null'
                       ' && echo "SEEN $p"; done; echo done', "sh", *paths])  # fmt: skip
    assert result.stdout.strip() == "done", result.stdout
    assert Path("/etc/shadow").exists()  # it is there on the host, just not inside


def test_harness_secrets_do_not_reach_the_environment(box: Sandbox) -> None:
    result = box.exec(["sh", "-c", "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"])
    assert SECRET not in result.stdout and "TOOLPROOF_TEST_API_KEY" not in result.stdout
    assert "WORKSPACE=/workspace" in result.stdout


def test_writes_outside_the_workspace_fail_or_vanish(box: Sandbox, tmp_path: Path) -> None:
    marker = f"escape-marker-{os.getpid()}"
    targets = [f"/{marker}", f"/usr/{marker}", f"/etc/{marker}", f"/tmp/{marker}",
               f"/var/tmp/{marker}", f"{tmp_path}/{marker}", f"/dev/shm/{marker}"]  # fmt: skip
    result = box.exec(["sh", "-c", 'for p in "$@"; do echo x > "$p" 2>/dev/null; done; true',
                       "sh", *targets])  # fmt: skip
    assert result.ok
    for target in targets:
        assert not Path(target).exists(), target


_PROC_SYS_PROBE = """
import os
held, changed = [], []
for path in ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
             "/proc/sys/vm/overcommit_memory", "/proc/sys/kernel/hostname",
             "/proc/sys/fs/suid_dumpable"]:
    try:
        value = open(path, "rb").read()
        with open(path, "wb") as knob:
            knob.write(value)  # the same value: even a success changes nothing
        changed.append(path)
    except OSError:
        held.append(path)
for path in ["/proc/sysrq-trigger", "/proc/kcore", "/proc/sys/kernel/sysrq"]:
    try:
        os.close(os.open(path, os.O_WRONLY))  # opened, never written
        changed.append(path)
    except OSError:
        held.append(path)
print("WRITABLE", changed)
"""


def test_kernel_knobs_cannot_be_written(box: Sandbox) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_bytes()
    result = box.exec(_py(_PROC_SYS_PROBE))
    assert "WRITABLE []" in result.stdout, result.stdout + result.stderr
    assert Path("/proc/sys/kernel/core_pattern").read_bytes() == before


_SYSCALLS = """
import ctypes, errno, os, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": {"keyctl": 250, "ptrace": 101, "bpf": 321, "perf_event_open": 298,
                 "kexec_load": 246, "userfaultfd": 323, "init_module": 175, "pivot_root": 155},
      "aarch64": {"keyctl": 219, "ptrace": 117, "bpf": 280, "perf_event_open": 241,
                  "kexec_load": 104, "userfaultfd": 282, "init_module": 105,
                  "pivot_root": 41}}[platform.machine()]
def check(name, result):
    print(name, "ALLOWED" if result >= 0 else errno.errorcode[ctypes.get_errno()])
check("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
check("umount2", libc.umount2(b"/tmp", 2))
check("unshare", libc.unshare(0x10000000))
check("setns", libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0))
check("personality", libc.personality(0x0040000))
for name, number in nr.items():
    check(name, libc.syscall(number, 0, 0, 0, 0, 0))
"""


def test_dangerous_system_calls_are_refused(box: Sandbox) -> None:
    result = box.exec(_py(_SYSCALLS))
    lines = dict(line.split() for line in result.stdout.splitlines())
    assert len(lines) == 13 and "ALLOWED" not in lines.values(), result.stdout + result.stderr
    assert lines["mount"] == lines["unshare"] == lines["keyctl"] == "EPERM"
    shell = box.exec("unshare -U true; echo unshare=$?; grep -E 'NoNewPrivs|CapEff|Seccomp:' "
                     "/proc/self/status")  # fmt: skip
    assert "unshare=1" in shell.stdout
    assert "NoNewPrivs:\t1" in shell.stdout and "CapEff:\t0000000000000000" in shell.stdout
    assert "Seccomp:\t2" in shell.stdout


def _unique(stem: str) -> str:
    """``stem`` with random digits: a name only this test's processes carry, so looking
    for leftovers never sees another program on a busy machine (or another test run)."""
    return f"{stem}{secrets.randbelow(10**9):09d}"


def test_fork_bomb_is_held(box: Sandbox, leftovers: Callable[[str], list[int]]) -> None:
    """The bomb meets the pids limit and the command is stopped for it. The shell waits
    with builtins only (a ``sleep`` it could no longer fork was skipped at once, and its
    ``echo`` could win the race with the harness's next look at the cgroup's events)."""
    bomb = _unique("bomb")
    wait = 'i=0; while [ "$i" -lt 3000000 ]; do i=$((i+1)); done'
    result = box.exec(f"{bomb}() {{ {bomb} | {bomb} & }}; {bomb}; {wait}; echo escape-fork-bomb")
    assert result.limit_hit == "pids" and "escape-fork-bomb" not in result.stdout, result
    assert leftovers(bomb) == []


@root_only
def test_fork_bomb_is_held_without_cgroups_too(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch, leftovers: Callable[[str], list[int]]
) -> None:
    # As the unprivileged sandbox user, RLIMIT_NPROC in the user namespace applies
    # (the kernel exempts host root from it, which is why it did not before).
    monkeypatch.setattr(_launch, "host_support", lambda: CgroupSupport({}))
    bomb = _unique("nobomb")
    result = box.exec(f"{bomb}() {{ {bomb} | {bomb} & }}; {bomb}; sleep 2", limits=SMALL)
    assert result.limit_hit == "pids", result
    assert leftovers(bomb) == []


_IO_URING = """
import ctypes, errno, os, platform
NUMBERS = {"x86_64": (425, 426, 427), "aarch64": (425, 426, 427)}  # asm-generic too
setup, enter, register = NUMBERS[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)  # struct io_uring_params
for name, number, args in (("io_uring_setup", setup, (8, params)),
                           ("io_uring_enter", enter, (0, 1, 0, 0, None, 0)),
                           ("io_uring_register", register, (0, 0, None, 0))):
    ctypes.set_errno(0)
    result = libc.syscall(number, *args)
    print(name, "ALLOWED" if result >= 0 else errno.errorcode[ctypes.get_errno()])
"""


def test_io_uring_is_refused(box: Sandbox) -> None:
    """Docker's default profile denies io_uring; so does the sandbox's filter (ENOSYS, so
    programs fall back to epoll): its rings do I/O no filter sees."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the filter knows x86_64 and aarch64")
    result = box.exec(_py(_IO_URING))
    lines = dict(line.split() for line in result.stdout.splitlines())
    assert set(lines) == {"io_uring_setup", "io_uring_enter", "io_uring_register"}, result
    assert set(lines.values()) <= {"ENOSYS", "EPERM"}, lines


def test_memory_bomb_is_held(box: Sandbox) -> None:
    result = box.exec(_py("x = bytearray(1024 * 1024 * 1024); print('ALLOCATED')"))
    assert result.limit_hit == "memory" and "ALLOCATED" not in result.stdout


def test_disk_bomb_stops_near_the_limit(box: Sandbox, workspace: Path) -> None:
    result = box.exec("head -c 3G /dev/zero > fill; echo wrote=$?")
    assert result.limit_hit == "workspace_size", result
    size = (workspace / "fill").stat().st_size
    assert size <= (SMALL.workspace_mb or 0) * 1024 * 1024 + 2 * 1024 * 1024  # held during it


def test_inode_bomb_is_held(box: Sandbox, workspace: Path) -> None:
    result = box.exec(_py(
        "import os\n"
        "for i in range(1_000_000):\n"
        "    try: open(f'f{i}', 'w').close()\n"
        "    except OSError as e: print('stopped', i, e.strerror); break\n"
    ), limits=ResourceLimits(**{**SMALL.__dict__, "wall_s": 60}))  # fmt: skip
    assert result.limit_hit == "workspace_size" and "stopped" in result.stdout, result
    assert len(os.listdir(workspace)) < 100_000


def test_cpu_loops_and_sleeps_are_stopped(box: Sandbox) -> None:
    spin = box.exec("while :; do :; done", limits=ResourceLimits(wall_s=20, cpu_s=1))
    assert spin.limit_hit == "cpu"
    nap = box.exec("sleep 300", limits=ResourceLimits(wall_s=1))
    assert nap.limit_hit == "wall_time" and nap.duration_s < 60  # not the 300 s it asked for


def test_daemons_do_not_outlive_their_command(
    box: Sandbox, leftovers: Callable[[str], list[int]]
) -> None:
    tokens = [f"sleep {n}.{_unique('')}" for n in (301, 302, 303)]
    result = box.exec(
        f"setsid nohup {tokens[0]} >/dev/null 2>&1 & ({tokens[1]} & ) ; "
        f"(setsid sh -c 'trap \"\" TERM HUP; {tokens[2]}' &) ; echo started"
    )
    assert result.ok and "started" in result.stdout
    for token in tokens:
        assert leftovers(token) == [], token


def test_wall_limit_holds_against_children_that_ignore_sigterm(box: Sandbox) -> None:
    command = "trap '' TERM HUP INT; for i in 1 2 3; do (trap '' TERM; sleep 100) & done; sleep 100"
    durations: list[float] = []

    def run() -> None:
        durations.append(box.exec(command, limits=ResourceLimits(wall_s=2)).duration_s)

    threads = [threading.Thread(target=run) for _ in range(4)]  # some load of its own
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Stopped at the limit, not after the children's 100 s (generous: a busy machine).
    assert len(durations) == 4 and max(durations) < 60, durations


def test_huge_output_is_capped(box: Sandbox) -> None:
    result = box.exec("yes escape")
    assert result.limit_hit == "output"
    assert len(result.stdout) + len(result.stderr) <= SMALL.output_bytes


@root_only
def test_no_sandboxed_process_holds_host_root(box: Sandbox, workspace: Path) -> None:
    token = f"sleep 37.{_unique('')}"
    outcome: list[object] = []
    thread = threading.Thread(
        target=lambda: outcome.append(box.exec(f"touch started; {token}; echo never")),
    )
    thread.start()
    try:
        seen = _wait_for(lambda: (workspace / "started").exists())
        assert seen, "the command never started"
        uids = {pid: _uid(pid) for pid in _pids_with(token)}
        assert uids and set(uids.values()) == {SANDBOX_UID}, uids
        assert (workspace / "started").stat().st_uid == SANDBOX_UID
    finally:
        box.close()
        thread.join()


def _wait_for(condition: Callable[[], bool], timeout_s: float = 15.0) -> bool:
    event = threading.Event()
    for _ in range(int(timeout_s / 0.05)):
        if condition():
            return True
        event.wait(0.05)
    return condition()


def _pids_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if token.encode() in cmdline and int(entry) != os.getpid():
                found.append(int(entry))
    return found


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[2])  # the effective uid
    raise AssertionError(f"no Uid line for {pid}")
