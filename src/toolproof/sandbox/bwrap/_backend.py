"""The ``bwrap`` backend: bubblewrap namespaces, the default on Linux.

Each command gets fresh namespaces of every kind (user, mount, pid, network, ipc,
uts, cgroup): no network interface but a private loopback, uid/gid 1000 without
capabilities (``--cap-drop ALL``), no new privileges, the seccomp filter of
``_seccomp``, the host's system directories read-only, the workspace as the only
writable host directory (at ``/workspace``), a fresh tmpfs ``/tmp``, and an
environment built from scratch. Limits come from the shared base class: a
per-command cgroup where possible, rlimits via ``prlimit`` inside the sandbox.

When the harness is root, bwrap itself never runs as root: the sandbox's spawner
(``_spawner``), living in the sandbox's cgroup, forks the command there and drops to
the unprivileged sandbox user (no groups) before the exec of ``bwrap -> command``;
when the spawner is busy or cannot run, the first process is started as that user
and waits at a gate until the harness has moved it into a per-command cgroup
(``_launch.Launcher._spawn``), then ``prlimit (the rlimits) -> bwrap -> command``. So the user
namespace maps uid 1000 inside to that unprivileged host uid, and the kernel treats
every sandboxed process as that user.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from toolproof.sandbox._base import WORKSPACE, Sandbox
from toolproof.sandbox._cgroup import CgroupSupport
from toolproof.sandbox._errors import SandboxError
from toolproof.sandbox._identity import sandbox_owner
from toolproof.sandbox._limits import ResourceLimits, nproc_argv
from toolproof.sandbox._registry import sandbox
from toolproof.sandbox._result import ExecResult
from toolproof.sandbox._wsfs import reachable_tmp
from toolproof.sandbox.bwrap._seccomp import program
from toolproof.sandbox.bwrap._spawner_slot import Lease, SpawnerSlot

__all__ = ["BwrapSandbox", "diagnose", "nproc_argv"]

_log = logging.getLogger(__name__)
UID = GID = 1000
#: Processes of bwrap itself a pids cgroup counts: the outer bwrap and its pid-1 reaper.
_PIDS_SLACK = 2
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: toolproof's own package (its suites: task files with reference solutions, hidden tests).
#: Where a bound directory holds it (a system-wide ``pip install`` under /usr), it is
#: covered by an empty tmpfs inside, so no command can read what scores it.
PACKAGE = Path(__file__).resolve().parents[2]
#: Top-level system directories bound read-only (or recreated as the host's symlinks).
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: The parts of /etc programs need; the rest of /etc (and its secrets) stays out.
_ETC = (
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version",
    "gitconfig", "inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
    "magic", "magic.mime", "mime.types", "nsswitch.conf", "os-release", "profile",
    "protocols", "python3", "services", "ssl", "timezone",
)  # fmt: skip
_GENERATED = {
    "passwd": (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"sandbox:x:{UID}:{GID}:sandbox:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "group": f"root:x:0:\nsandbox:x:{GID}:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n",
    "hostname": "sandbox\n",
}


def _write_etc(directory: Path) -> None:
    for name, text in _GENERATED.items():
        (directory / name).write_text(text)
        (directory / name).chmod(0o644)
    directory.chmod(0o755)


def seccomp_pipe() -> int | None:
    """A pipe's read end holding the seccomp program (bwrap reads it to the end)."""
    code = program()
    if code is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, code)  # ~1 KB, far below the pipe buffer
    finally:
        os.close(write)
    return read


@functools.cache
def _system_binds() -> tuple[str, ...]:
    """The options binding the host's system directories and /etc parts; built once.

    The host's layout (which of /bin, /lib... are symlinks) does not change while
    the harness runs, and checking it costs ~20 system calls per command.
    """
    argv: list[str] = []
    for name in _SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            argv += ["--ro-bind", str(host), f"/{name}"]
    for name in _ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return tuple(argv)


def build_argv(
    bwrap: str,
    features: frozenset[str],
    *,
    workspace: Path,
    etc: Path,
    cwd: str,
    env: Mapping[str, str],
    tmp_bytes: int | None,
    ro_binds: Mapping[str, str] | None = None,
    seccomp_fd: int | None = None,
    hide: Sequence[Path] | None = None,
    origins: Mapping[str, str] | None = None,
) -> list[str]:
    """The bwrap command line (without the command) for one sandboxed command.

    Args:
        bwrap: Path of the bwrap binary.
        features: Optional bwrap options this version supports (``--size``,
            ``--disable-userns``).
        workspace: Host directory bound read-write at /workspace.
        etc: Host directory holding the generated passwd, group, hosts, hostname.
        cwd: Directory to start in, inside the sandbox.
        env: The complete environment inside the sandbox.
        tmp_bytes: Size cap of the /tmp tmpfs, or None.
        ro_binds: Extra host paths bound read-only, host path to path inside.
        seccomp_fd: A descriptor holding the seccomp program, or None for none.
        hide: Host directories never visible inside (default: ``PACKAGE``): where a
            bound directory (a system one or a ``ro_binds`` source) holds one, it is
            covered by an empty tmpfs.
        origins: The host path a re-bound ``ro_binds`` source shows (``bind_origins``).
    """
    argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(GID)]
    argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]
    argv += ["--cap-drop", "ALL"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if "--disable-userns" in features:
        argv.append("--disable-userns")
    argv += _system_binds()
    for name in _GENERATED:
        argv += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    under_tmp = {k: v for k, v in (ro_binds or {}).items() if v.startswith("/tmp/")}
    for source, inside in (ro_binds or {}).items():
        if source not in under_tmp:
            argv += ["--ro-bind", source, inside]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    if tmp_bytes is not None and "--size" in features:
        argv += ["--size", str(tmp_bytes)]
    argv += ["--tmpfs", "/tmp", "--dir", "/var", "--symlink", "../tmp", "/var/tmp"]
    for source, inside in under_tmp.items():  # after the fresh /tmp, or it would hide them
        argv += ["--ro-bind", source, inside]
    argv += _masks((PACKAGE,) if hide is None else hide, ro_binds or {}, origins or {})
    argv += ["--bind", str(workspace), WORKSPACE, "--remount-ro", "/", "--chdir", cwd]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "--"]


def _masks(
    hide: Sequence[Path], ro_binds: Mapping[str, str], origins: Mapping[str, str]
) -> list[str]:
    """``--tmpfs`` options covering each ``hide`` path wherever a bind makes it visible."""
    argv = list(_system_masks(tuple(hide)))
    for path in hide:
        for source, inside in ro_binds.items():  # sources are resolved (check_binds)
            shown = origins.get(source, source)
            if path.is_relative_to(shown):
                argv += ["--tmpfs", str(Path(inside) / path.relative_to(shown))]
    return argv


@functools.cache
def _system_masks(hide: tuple[Path, ...]) -> tuple[str, ...]:
    """The masks for the bound system directories (a symlinked one is seen through its
    target, which is bound itself); the layout does not change while the harness runs."""
    argv: list[str] = []
    for path in hide:
        for name in _SYSTEM_DIRS:
            host = Path("/") / name
            if not host.is_symlink() and path.is_relative_to(host):
                argv += ["--tmpfs", str(path)]
    return tuple(argv)


@functools.cache
def _probe() -> tuple[str | None, str, frozenset[str]]:
    """(reason bwrap is unusable or None, bwrap path, optional features); run once."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "the 'bwrap' program is not installed (apt-get install bubblewrap)", "", frozenset()
    prlimit = shutil.which("prlimit")
    if prlimit is None or not prlimit.startswith(("/usr/", "/bin/", "/sbin/")):
        return "the 'prlimit' program (util-linux) is missing from /usr/bin", bwrap, frozenset()
    try:
        usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"'{bwrap} --help' failed: {exc}", bwrap, frozenset()
    text = usage.stdout + usage.stderr
    if "--clearenv" not in text:
        return (
            f"{bwrap} is too old (no --clearenv); install bubblewrap 0.5 or newer",
            bwrap,
            frozenset(),
        )
    features = frozenset(f for f in ("--size", "--disable-userns") if f in text)
    owner = sandbox_owner()
    try:
        where = reachable_tmp(owner)  # never the harness's private TMPDIR
    except SandboxError as exc:
        return str(exc), bwrap, features
    seccomp = seccomp_pipe()
    with tempfile.TemporaryDirectory(prefix="toolproof-bwrap-probe-", dir=where) as tmp:
        _write_etc(Path(tmp))
        argv = build_argv(
            bwrap,
            features,
            workspace=Path(tmp),
            etc=Path(tmp),
            cwd=WORKSPACE,
            env={"PATH": _PATH},
            tmp_bytes=None,
            seccomp_fd=seccomp,
        )
        try:
            run = subprocess.run(
                [*nproc_argv(owner), *argv, prlimit, "--", "true"],
                capture_output=True,
                text=True,
                timeout=30,
                env={"PATH": _PATH},
                pass_fds=() if seccomp is None else (seccomp,),
                user=None if owner is None else owner[0],
                group=None if owner is None else owner[1],
                extra_groups=None if owner is None else [],
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"a test sandbox failed to run: {exc}", bwrap, features
        finally:
            if seccomp is not None:
                os.close(seccomp)
    if run.returncode != 0:
        said = run.stderr.strip() or f"exit {run.returncode}"
        return f"a test sandbox failed ({said}); {diagnose(said, owner)}", bwrap, features
    return None, bwrap, features


#: Kernel settings that keep unprivileged processes out of user namespaces: file, the
#: value that does, and what to run instead.
_USERNS_KNOBS = (
    ("/proc/sys/user/max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"),
    (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "0",
        "sysctl -w kernel.unprivileged_userns_clone=1",
    ),
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile "
        "for bwrap",
    ),
)


def diagnose(stderr: str, owner: tuple[int, int] | None) -> str:
    """The real cause of a failed test sandbox, from bwrap's message and the host.

    Args:
        stderr: What bwrap said.
        owner: The host user the test sandbox ran as (None: the harness's own).
    """
    who = "the harness's user" if owner is None else f"the sandbox user (uid {owner[0]})"
    if "Permission denied" in stderr and ("source path" in stderr or "chdir" in stderr):
        return (
            f"{who} cannot reach a directory bwrap binds: a parent is not searchable by it; "
            "make the directories on the way searchable (chmod o+x), or point TMPDIR at one "
            "it can reach (e.g. TMPDIR=/tmp)"
        )
    for path, value, fix in _USERNS_KNOBS:
        try:
            current = Path(path).read_text().strip()
        except OSError:
            continue
        if current == value:
            return f"user namespaces are disabled for {who}: {path} is {value}; {fix}"
    if "namespace" in stderr.lower() or "uid map" in stderr.lower():
        return (
            f"{who} may not create user namespaces here (a container without them, or a "
            "seccomp or AppArmor policy denying unshare); run with user namespaces allowed, "
            "or choose a container backend (--sandbox podman or docker)"
        )
    return (
        "bwrap could not set up the sandbox; run `bwrap --unshare-all --uid 1000 --dev /dev "
        "--ro-bind / / true` as that user to see why"
    )


@functools.cache
def _warn_no_seccomp() -> None:
    _log.warning(
        "no seccomp filter is known for this machine (%s); bwrap commands run without "
        "one (supported: x86_64, aarch64)",
        os.uname().machine,
    )


@sandbox("bwrap")
class BwrapSandbox(Sandbox):
    """Runs each command in fresh bubblewrap namespaces (see the module docstring).

    The environment inside is ``PATH``, ``HOME=/tmp``, ``TMPDIR=/tmp``,
    ``LANG=C.UTF-8``, ``USER=sandbox``, ``WORKSPACE=/workspace``, then ``env``.
    Nothing survives a command but what it wrote to /workspace: /tmp is new each time.
    """

    isolated = True
    drops_root = True
    own_program = True  # prlimit, bwrap, the gate or the cgroup join: never the command

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why bubblewrap cannot be used here (with the fix), or None; probed once."""
        return _probe()[0]

    def _lease(
        self, support: CgroupSupport, pids: int | None, memory_mb: int | None
    ) -> Lease | None:
        """The sandbox's spawner for one command, or None (see ``SpawnerSlot.lease``)."""
        slot = self._spawner_slot(support)
        return None if slot is None else slot.lease(pids, memory_mb)

    def _spawner_slot(self, support: CgroupSupport) -> SpawnerSlot | None:
        """The sandbox's ``SpawnerSlot`` (made on first use), or None where none can run."""
        if self.owner is None or not support.parents:
            return None
        with self._lock:
            if self._slot is None:
                self._slot = slot = SpawnerSlot(support)
                weakref.finalize(self, slot.close)  # no helper outlives the sandbox
                return slot
            return self._slot if isinstance(self._slot, SpawnerSlot) else None

    def _etc_dir(self) -> Path:
        """The generated passwd, group, hosts and hostname, written once per sandbox."""
        known: Path | None = getattr(self, "_etc", None)
        if known is not None:  # in the sandbox's private scratch directory: it stays
            return known
        scratch = self._scratch_dir()
        with self._lock:  # another thread's bwrap must never bind a half-written file
            etc = scratch / "etc"
            if not etc.is_dir():
                staging = Path(tempfile.mkdtemp(dir=scratch))
                _write_etc(staging)
                staging.rename(etc)
            self._etc = etc
        return etc

    def exec(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = WORKSPACE,
        env: Mapping[str, str] | None = None,
        limits: ResourceLimits | None = None,
    ) -> ExecResult:
        """Run ``command`` inside fresh namespaces (see ``Sandbox.exec``).

        Raises:
            SandboxError: The sandbox is closed, or ``cwd`` under /workspace does
                not exist.
        """
        chosen = limits or self.limits
        inner = self._checked_cwd(cwd)
        _, bwrap, features = _probe()
        if program() is None:
            _warn_no_seccomp()
        inside = {
            "PATH": _PATH,
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "USER": "sandbox",
            "WORKSPACE": WORKSPACE,
            **self._check_env(env),
        }
        # /tmp lives in RAM: cap it by the memory budget (or the workspace budget).
        tmp_mb = chosen.memory_mb or chosen.workspace_mb
        etc = self._etc_dir()
        self._check_open()
        seccomp = seccomp_pipe()
        try:
            # Every command of a sandbox mostly has the same prefix: built again only
            # when what varies (cwd, environment, /tmp size, descriptor) does.
            key = (inner, tuple(inside.items()), tmp_mb, seccomp)
            known = getattr(self, "_prefix", None)
            if known is not None and known[0] == key:
                prefix: list[str] = known[1]
            else:
                prefix = build_argv(
                    bwrap,
                    features,
                    workspace=self.bind_source,
                    etc=etc,
                    cwd=inner,
                    env=inside,
                    tmp_bytes=None if tmp_mb is None else tmp_mb * 1024 * 1024,
                    ro_binds=self.ro_binds,
                    seccomp_fd=seccomp,
                    hide=(PACKAGE, *self.hide),
                    origins=self.bind_origins,
                )
                self._prefix = (key, prefix)
            return self._exec_limited(
                command,
                lambda argv: [*prefix, *argv],
                env={"PATH": _PATH},
                host_cwd=self.workspace,
                stdin=stdin,
                limits=chosen,
                nproc_rlimit=True,
                pids_slack=_PIDS_SLACK,
                pass_fds=() if seccomp is None else (seccomp,),
                # RLIMIT_NPROC must be set inside the user namespace; the others are
                # inherited through bwrap, so they are set first.
                rlimits_outside=True,
                # Resize and owner walk while the command waits at its cgroup gate.
                hand_over=lambda: self._hand_over(chosen),
                raise_nproc=True,  # all sandboxes share one host uid (``nproc_raise``)
            )
        finally:
            if seccomp is not None:
                os.close(seccomp)
