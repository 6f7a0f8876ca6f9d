"""The ``podman`` and ``docker`` backends: one short-lived container per command.

Each command runs ``<engine> run --init`` (so pid 1 is a real init that lets
``SIGXCPU`` and friends act) on the given image with no network, all
capabilities dropped, ``no-new-privileges``, a read-only root, a tmpfs /tmp, the
workspace bind-mounted at /workspace, and explicit ``--memory``, ``--pids-limit``
and ``--ulimit`` values. The engine's cgroups do the limiting; an OOM kill is read
back with ``inspect`` before the container is removed, and an exit by SIGKILL (137)
under a memory limit is counted as one too, since engines do not always record it.

When the harness is root (so the engine is rootful), the command runs as the
unprivileged sandbox user (``--user``), never as the image's root, on the same
size-limited tmpfs workspace as bwrap; RLIMIT_NPROC is then not used (without a
user namespace it would count every sandbox's processes together), the engine's
pids cgroup limits each container. The engine's own seccomp profile (an allowlist,
stricter than bwrap's denylist) is required: an engine that reports seccomp
disabled is refused.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import ClassVar

from toolproof.sandbox._base import WORKSPACE, Sandbox
from toolproof.sandbox._detect import classify
from toolproof.sandbox._limits import ResourceLimits
from toolproof.sandbox._registry import sandbox
from toolproof.sandbox._result import ExecResult

__all__ = ["DockerSandbox", "PodmanSandbox"]

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@functools.cache
def _engine_reason(binary: str) -> str | None:
    path = shutil.which(binary)
    if path is None:
        return f"the '{binary}' program is not installed"
    try:
        info = subprocess.run([path, "info"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"'{binary} info' failed: {exc}"
    if info.returncode != 0:
        return f"'{binary} info' failed: {info.stderr.strip()[:300]}"
    if not _seccomp_enabled(binary, info.stdout):
        return (
            f"'{binary} info' reports no seccomp support, so containers would run with the "
            "kernel's whole system-call surface; use an engine built with seccomp"
        )
    return None


def _seccomp_enabled(binary: str, info: str) -> bool:
    """Whether ``<binary> info`` output says containers get a seccomp profile."""
    if binary == "podman":
        return "seccompEnabled: false" not in info
    return "seccomp" in info  # docker lists it under "Security Options"


def _ulimit(kind: int, want: int) -> str:
    """``want:want`` capped at the harness's own hard limit (raising it needs privilege)."""
    hard = resource.getrlimit(kind)[1]
    value = want if hard == resource.RLIM_INFINITY else min(want, hard)
    return f"{value}:{value}"


@sandbox("podman")
class PodmanSandbox(Sandbox):
    """One ``podman run`` per command on ``image`` (see the module docstring).

    The container's user is the image's (usually root, without capabilities) when
    the harness is not root (a rootless engine maps it to the harness's user), and
    the unprivileged sandbox user when it is.
    """

    isolated = True
    uses_image = True
    drops_root = True
    binary: ClassVar[str] = "podman"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the container engine cannot be used here, or None; probed once."""
        return _engine_reason(cls.binary)

    def run_argv(
        self, container: str, command: list[str], *, cwd: str, env: Mapping[str, str],
        limits: ResourceLimits, interactive: bool,
    ) -> list[str]:  # fmt: skip
        """The ``<engine> run`` command line for one command."""
        argv = [self.binary, "run", "--name", container, "--network=none", "--cap-drop=ALL"]
        argv += ["--security-opt=no-new-privileges", "--read-only", "--hostname", "sandbox"]
        argv.append("--init")  # pid 1 ignores SIGXCPU and friends; a real init does not
        tmp_mb = limits.memory_mb or limits.workspace_mb
        tmpfs = "/tmp:rw,mode=1777" + (f",size={tmp_mb}m" if tmp_mb else "")
        argv += ["--tmpfs", tmpfs, "-v", f"{self.bind_source}:{WORKSPACE}", "-w", cwd]
        if self.owner is not None:
            argv += ["--user", "{}:{}".format(*self.owner)]
        for host, inside in self.ro_binds.items():
            argv += ["-v", f"{host}:{inside}:ro"]
        if limits.memory_mb is not None:
            argv += ["--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m"]
        if limits.pids is not None:
            argv += ["--pids-limit", str(limits.pids)]
        # Explicit values: engines default to limits above this host's hard limits,
        # which the runtime may not raise. nproc binds a non-root user only, and then
        # counts every process of that host uid: as the shared sandbox user, a small
        # value would let parallel episodes exhaust each other, so it is left at 4096
        # (the most runc accepted on the development host) and the pids cgroup
        # (--pids-limit) limits each container.
        nproc = 4096 if self.owner is not None else limits.pids or 4096
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
        for name, value in ulimits.items():
            argv += ["--ulimit", f"{name}={value}"]
        for key, value in env.items():
            argv += ["--env", f"{key}={value}"]
        if interactive:
            argv.append("-i")
        assert self.image is not None
        return [*argv, self.image, *command]

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
            "PATH": _PATH,
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "WORKSPACE": WORKSPACE,
            **self._check_env(env),
        }
        container = f"toolproof-{os.urandom(8).hex()}"
        argv = self.run_argv(container, self._argv(command), cwd=inner, env=inside,
                             limits=chosen, interactive=stdin is not None)  # fmt: skip
        try:
            outcome = self._run(argv, env={"PATH": _PATH}, cwd=str(self.workspace),
                                stdin=stdin, limits=chosen)  # fmt: skip
            oom = self._engine(["inspect", "--format", "{{.State.OOMKilled}}", container])
        finally:
            self._engine(["rm", "--force", "--time", "0", container])
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

    def _engine(self, args: list[str]) -> str:
        """Run an engine sub-command for bookkeeping; its failures are not the command's."""
        try:
            done = subprocess.run([self.binary, *args], capture_output=True, text=True,
                                  timeout=60, env={"PATH": _PATH})  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout


@sandbox("docker")
class DockerSandbox(PodmanSandbox):
    """The same as ``podman`` through the ``docker`` CLI (which accepts the same flags)."""

    binary: ClassVar[str] = "docker"
