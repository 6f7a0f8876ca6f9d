"""The container backends: one short-lived container per command, podman or docker.

Both engines share this one implementation, parameterized by the engine's CLI
(:class:`ContainerSandbox`; ``podman`` here, ``docker`` in ``_docker``). Each command
runs ``<engine> run --init`` (so pid 1 is a real init that lets ``SIGXCPU`` and friends
act) on a local image (``--pull=never``: nothing is ever pulled) with no network, all
capabilities dropped, ``no-new-privileges``, a read-only root, a tmpfs /tmp, the
workspace bind-mounted at /workspace, and explicit ``--memory``, ``--pids-limit`` and
``--ulimit`` values. The engine's cgroups do the limiting; an OOM kill is read back
with ``inspect`` before the container is removed, and an exit by SIGKILL (137) under a
memory limit is counted as one too, since engines do not always record it.

The argv is built in one place (:meth:`ContainerSandbox.run_argv`) of single
``--flag=value`` words, so no value (a working directory, a variable's name, a path)
can be read as a flag, and checked again by :func:`check_run_argv` before it runs:
no ``--privileged``, no added capability, no other network, and no bind of the host's
``/`` or of a directory holding an engine's socket (either would be the host's root).

When the harness is root (so the engine is rootful), the command runs as the
unprivileged sandbox user (``--user``), never as the image's root, on the same
size-limited tmpfs workspace as bwrap; RLIMIT_NPROC is then not used (without a
user namespace it would count every sandbox's processes together), the engine's
pids cgroup limits each container. The engine's own seccomp profile (an allowlist,
stricter than bwrap's denylist) is required: an engine that reports seccomp
disabled is refused.

Lifecycle: each container is named ``toolproof-<owner>-<random>``, where the owner
names this harness process (boot, pid namespace, pid, start time). It is removed
after its command (``rm --force``, also on a wall-time kill), every container still
running is removed by ``close``, and the first sandbox of a process removes the
containers left by harness processes of this boot that are gone (a crash).
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from toolproof.sandbox._args import command_argv
from toolproof.sandbox._base import _DEFAULT_LIMITS, WORKSPACE, Sandbox
from toolproof.sandbox._detect import classify
from toolproof.sandbox._engine import (
    ENGINE_PATH,
    EngineInfo,
    check_bind_source,
    check_bind_target,
    check_image,
    check_run_argv,
)
from toolproof.sandbox._errors import SandboxError
from toolproof.sandbox._limits import ResourceLimits
from toolproof.sandbox._registry import sandbox
from toolproof.sandbox._result import ExecResult

__all__ = ["ContainerSandbox", "PodmanSandbox", "owner_token", "swept_owner"]

_PREFIX = "toolproof-"
_SWEPT: set[tuple[str, str | None]] = set()
_IMAGES: set[tuple[str, str | None, str]] = set()
_PROBES: dict[tuple[str, str | None, str | None], EngineInfo] = {}
_LOCK = threading.Lock()


def _ask(argv: list[str], env: dict[str, str]) -> str:
    """An engine query's standard output, or (a ``str`` subclass) why it failed."""
    name = " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv[:3]))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _Failure(f"'{name}' failed: {exc}")
    if done.returncode != 0:
        return _Failure(f"'{name}' failed: {done.stderr.strip()[:300]}")
    return done.stdout


class _Failure(str):
    """A failed engine query's explanation (told apart from output by its type)."""


def _no_seccomp(binary: str) -> str:
    return (
        f"'{binary} info' reports no seccomp support, so containers would run with the "
        "kernel's whole system-call surface; use an engine built with seccomp"
    )


def _ulimit(kind: int, want: int) -> str:
    """``want:want`` capped at the harness's own hard limit (raising it needs privilege)."""
    hard = resource.getrlimit(kind)[1]
    value = want if hard == resource.RLIM_INFINITY else min(want, hard)
    return f"{value}:{value}"


def _start_time(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (tells a reused pid apart)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


@functools.cache
def _boot_and_pidns() -> tuple[str, str]:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip().replace("-", "")[:12]
    except OSError:
        boot = "noboot"
    try:
        pidns = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        pidns = "0"
    return boot, pidns


def owner_token(pid: int | None = None) -> str:
    """``<boot>-<pid namespace>-<pid>-<start time>``: names a harness process for its life."""
    pid = os.getpid() if pid is None else pid
    boot, pidns = _boot_and_pidns()
    return f"{boot}-{pidns}-{pid}-{_start_time(pid) or 0}"


def swept_owner(name: str) -> bool:
    """Whether container ``name`` was made by a harness process of this boot that is gone.

    Only containers of this boot and pid namespace are judged (another namespace's
    pids cannot be seen from here); their owner is gone when its pid is not alive or
    is a newer process (another start time).
    """
    parts = name[len(_PREFIX) :].split("-") if name.startswith(_PREFIX) else []
    if len(parts) != 5 or not parts[2].isdigit():
        return False
    boot, pidns = _boot_and_pidns()
    if (parts[0], parts[1]) != (boot, pidns):
        return False
    return _start_time(int(parts[2])) != parts[3]


class ContainerSandbox(Sandbox):
    """One ``<engine> run`` per command on ``image`` (see the module docstring).

    Subclasses name the engine's CLI (``binary``) and say how to remove a container
    and which user the container runs as; everything else is shared.
    """

    isolated = True
    uses_image = True
    drops_root = True
    binary: ClassVar[str]
    #: Words after ``rm`` that remove a container at once, running or not.
    remove_flags: ClassVar[tuple[str, ...]] = ("--force",)

    def __init__(
        self,
        workspace: Path,
        limits: ResourceLimits = _DEFAULT_LIMITS,
        *,
        image: str | None = None,
        ro_binds: Mapping[str, str] | None = None,
        hide: Sequence[Path] = (),
    ) -> None:
        """Set up as ``Sandbox`` does, then check the mounts and that the image is local.

        Raises:
            SandboxError: As ``Sandbox``; or the image is no plain local reference or is
                not in the engine's store (toolproof never pulls one); or a mount source
                would show the host's root or an engine's socket.
        """
        self._containers: set[str] = set()
        if image is not None:  # before anything is mounted; Sandbox refuses a missing one
            check_image(image)
        for host in (str(workspace), *(ro_binds or {})):
            check_bind_source(host, self.info())
        for inside in (ro_binds or {}).values():
            check_bind_target(str(inside))
        super().__init__(workspace, limits, image=image, ro_binds=ro_binds, hide=hide)
        try:
            assert self.image is not None
            for bound in (self.bind_source, *self.ro_binds):  # where the harness re-bound them
                check_bind_source(str(bound), self.info())
            if not self._image_found(self.image):
                raise SandboxError(
                    f"image {self.image!r} is not in {self.binary}'s local image store; build "
                    f"or import it on this host first (e.g. `{self.binary} import ROOTFS.tar "
                    f"{self.image}`): toolproof never pulls an image"
                )
            self._sweep()
        except BaseException:
            self.close()
            raise

    @classmethod
    def info(cls) -> EngineInfo:
        """The engine as probed once per process, program path and ``DOCKER_HOST``."""
        path = shutil.which(cls.binary)
        key = (cls.binary, path, os.environ.get("DOCKER_HOST"))
        with _LOCK:
            known = _PROBES.get(key)
        if known is None:
            if path is None:
                known = EngineInfo(cls.binary, None, f"the '{cls.binary}' program is not installed")
            else:
                known = cls.probe(path)
            with _LOCK:
                _PROBES[key] = known
        return known

    @classmethod
    def probe(cls, path: str) -> EngineInfo:
        """Ask the engine at ``path`` whether it runs here, with seccomp, and how."""
        done = _ask([path, "info"], {"PATH": ENGINE_PATH})
        if isinstance(done, _Failure):
            return EngineInfo(cls.binary, path, done)
        if "seccompEnabled: false" in done:
            return EngineInfo(cls.binary, path, _no_seccomp(cls.binary))
        return EngineInfo(cls.binary, path, None, rootless="rootless: true" in done)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the container engine cannot be used here, or None; probed once."""
        return cls.info().reason

    def container_user(self) -> tuple[int, int] | None:
        """The host (uid, gid) the container runs as, or None for the image's user."""
        return self.owner

    def run_argv(
        self, container: str, command: list[str], *, cwd: str, env: Mapping[str, str],
        limits: ResourceLimits, interactive: bool,
    ) -> list[str]:  # fmt: skip
        """The ``<engine> run`` command line for one command: the one place it is built.

        Every option is one ``--flag=value`` word, and ``--`` ends the options before
        the image, so no value can become a flag or a mount.
        """
        info = self.info()
        argv = [info.path or self.binary, "run", f"--name={container}", "--pull=never"]
        argv += ["--label=toolproof.sandbox=1", "--network=none", "--cap-drop=ALL"]
        argv += ["--security-opt=no-new-privileges", "--read-only", "--hostname=sandbox"]
        argv.append("--init")  # pid 1 ignores SIGXCPU and friends; a real init does not
        tmp_mb = limits.memory_mb or limits.workspace_mb
        argv.append("--tmpfs=/tmp:rw,mode=1777" + (f",size={tmp_mb}m" if tmp_mb else ""))
        argv += [f"--volume={self.bind_source}:{WORKSPACE}", f"--workdir={cwd}"]
        user = self.container_user()
        if user is not None:
            argv.append("--user={}:{}".format(*user))
        for host, inside in self.ro_binds.items():
            argv.append(f"--volume={host}:{inside}:ro")
        if limits.memory_mb is not None:
            argv += [f"--memory={limits.memory_mb}m", f"--memory-swap={limits.memory_mb}m"]
        if limits.pids is not None:
            argv.append(f"--pids-limit={limits.pids}")
        # Explicit values: engines default to limits above this host's hard limits,
        # which the runtime may not raise. nproc binds a non-root user only, and then
        # counts every process of that host uid: as the shared sandbox user, a small
        # value would let parallel episodes exhaust each other, so it is left at 4096
        # (the most runc accepted on the development host) and the pids cgroup
        # (--pids-limit) limits each container.
        nproc = 4096 if user is not None else limits.pids or 4096
        ulimits = {
            "nofile": _ulimit(resource.RLIMIT_NOFILE, 4096),
            "nproc": _ulimit(resource.RLIMIT_NPROC, nproc),
        }
        if limits.cpu_s is not None:
            soft = max(1, math.ceil(limits.cpu_s))
            ulimits["cpu"] = f"{soft}:{soft + 1}"
        if limits.file_size_mb is not None:
            size = limits.file_size_mb * 1024 * 1024
            ulimits["fsize"] = f"{size}:{size}"
        argv += [f"--ulimit={name}={value}" for name, value in ulimits.items()]
        argv += [f"--env={key}={value}" for key, value in env.items()]
        if interactive:
            argv.append("--interactive")
        assert self.image is not None
        argv = [*argv, "--", self.image, *command]
        check_run_argv(argv, self.bind_source, self.ro_binds, info)
        return argv

    def exec(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = WORKSPACE,
        env: Mapping[str, str] | None = None,
        limits: ResourceLimits | None = None,
    ) -> ExecResult:
        """Run ``command`` in a new container (see ``Sandbox.exec``).

        Raises:
            SandboxError: The sandbox is closed, or ``cwd`` under /workspace does
                not exist.
        """
        chosen = limits or self.limits
        inner = self._checked_cwd(cwd)
        self._prepare(chosen)
        inside = {
            "PATH": ENGINE_PATH,
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "WORKSPACE": WORKSPACE,
            **self._check_env(env),
        }
        container = f"{_PREFIX}{owner_token()}-{os.urandom(4).hex()}"
        argv = self.run_argv(container, command_argv(command), cwd=inner, env=inside,
                             limits=chosen, interactive=stdin is not None)  # fmt: skip
        with self._lock:
            self._containers.add(container)
        try:
            outcome = self._run(argv, env=self.info().client_env, cwd=str(self.workspace),
                                stdin=stdin, limits=chosen)  # fmt: skip
            oom = self._engine(["inspect", "--format", "{{.State.OOMKilled}}", container])
        finally:
            self._remove([container])
        hit = classify(
            chosen,
            returncode=outcome.returncode,
            stopped=outcome.stopped,
            stderr=outcome.stderr,
            truncated=outcome.truncated,
            # Engines do not always notice an OOM kill (podman 4 on cgroup v1 does not):
            # a SIGKILLed command under a memory limit counts as one too.
            oom_event=oom.strip() == "true"
            or (chosen.memory_mb is not None and outcome.returncode == 128 + 9),
            pids_by_text=True,
        )
        return self._result(outcome, hit, chosen)

    def close(self) -> None:
        """Kill and remove every container of this sandbox still there, then as ``Sandbox``."""
        with self._lock:
            left = sorted(getattr(self, "_containers", ()))
        super().close()  # stops the engine clients first, so none starts a container after
        if left:
            self._remove(left)

    def _remove(self, names: list[str]) -> None:
        self._engine(["rm", *self.remove_flags, *names])
        with self._lock:
            self._containers.difference_update(names)

    def _image_found(self, image: str) -> bool:
        """Whether ``image`` is in the engine's local store (a found one is not asked again)."""
        key = (self.binary, self.info().endpoint, image)
        with _LOCK:
            if key in _IMAGES:
                return True
        if not self._engine(["image", "inspect", "--format", "{{.Id}}", image]).strip():
            return False
        with _LOCK:
            _IMAGES.add(key)
        return True

    def _sweep(self) -> None:
        """Once per process and engine: remove containers whose harness process is gone."""
        key = (self.binary, self.info().endpoint)
        with _LOCK:
            if key in _SWEPT:
                return
            _SWEPT.add(key)
        listing = self._engine(["ps", "--all", "--filter", f"name={_PREFIX}",
                                "--format", "{{.Names}}"])  # fmt: skip
        orphans = [name for name in listing.split() if swept_owner(name)]
        if orphans:
            self._engine(["rm", *self.remove_flags, *orphans])

    def _engine(self, args: list[str]) -> str:
        """Run an engine sub-command for bookkeeping; its failures are not the command's."""
        info = self.info()
        try:
            done = subprocess.run([info.path or self.binary, *args], capture_output=True,
                                  text=True, timeout=60, env=info.client_env)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout if done.returncode == 0 else ""


@sandbox("podman")
class PodmanSandbox(ContainerSandbox):
    """``podman run`` per command (see the module docstring).

    The container's user is the image's (usually root, without capabilities) when
    the harness is not root (a rootless engine maps it to the harness's user), and
    the unprivileged sandbox user when it is.
    """

    binary: ClassVar[str] = "podman"
    remove_flags: ClassVar[tuple[str, ...]] = ("--force", "--time", "0", "--volumes")
