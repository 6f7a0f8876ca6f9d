"""Resource limits for one command and the names of the limits a command can hit."""

from __future__ import annotations

import functools
import math
import re
import resource
import subprocess
from dataclasses import dataclass, fields, replace
from typing import Final

from toolproof.sandbox._errors import SandboxError

__all__ = ["LIMIT_NAMES", "ResourceLimits", "nproc_argv", "nproc_raise", "sh_sets_rlimits"]

#: Every value ``ExecResult.limit_hit`` can take besides ``None``.
LIMIT_NAMES: Final = frozenset(
    {"wall_time", "cpu", "memory", "pids", "file_size", "workspace_size", "output"}
)


@dataclass(frozen=True)
class ResourceLimits:
    """What one command may use. ``None`` turns a limit off.

    Attributes:
        wall_s: Wall-clock seconds per command; the whole process tree is killed then.
        cpu_s: CPU seconds per process (``RLIMIT_CPU``; a process gets ``SIGXCPU``).
        memory_mb: Memory in MiB: a memory cgroup where one can be created, else
            ``RLIMIT_AS`` (address space, so virtual memory counts).
        pids: Processes and threads at once: a pids cgroup where one can be created,
            else ``RLIMIT_NPROC`` inside the bwrap user namespace (bwrap commands are
            never host root, so it applies).
        file_size_mb: Largest file a process may write (``RLIMIT_FSIZE``).
        workspace_mb: Total apparent size of the workspace: held during a command by a
            size-limited tmpfs (root harness with ``CAP_SYS_ADMIN``), else by
            ``RLIMIT_FSIZE`` and a watchdog; checked after each command too.
        output_bytes: Bytes of stdout plus stderr kept; the command is stopped past it.
    """

    wall_s: float = 30.0
    cpu_s: float | None = 30.0
    memory_mb: int | None = 1024
    pids: int | None = 128
    file_size_mb: int | None = 64
    workspace_mb: int | None = 512
    output_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.name not in ("wall_s", "output_bytes"):
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                hint = "" if field.name in ("wall_s", "output_bytes") else " or None for no limit"
                raise SandboxError(
                    f"ResourceLimits.{field.name} must be a positive number{hint}, got {value!r}"
                )

    def prlimit_args(self, *, nproc: bool, address_space: bool) -> list[str]:
        """Options for util-linux ``prlimit`` that set these limits as rlimits.

        Soft and hard limits are equal except for CPU, whose hard limit is one second
        later so the process first gets the catchable ``SIGXCPU``.

        Args:
            nproc: Also set ``RLIMIT_NPROC`` (only useful inside a user namespace).
            address_space: Set ``RLIMIT_AS`` from ``memory_mb`` (when no memory cgroup).
        """
        args: list[str] = []
        if self.cpu_s is not None:
            soft = max(1, math.ceil(self.cpu_s))
            args.append(f"--cpu={soft}:{soft + 1}")
        if self.file_size_mb is not None:
            args.append(f"--fsize={self.file_size_mb * 1024 * 1024}")
        if address_space and self.memory_mb is not None:
            args.append(f"--as={self.memory_mb * 1024 * 1024}")
        if nproc and self.pids is not None:
            args.append(f"--nproc={self.pids}")
        return args

    def rlimit_values(self, *, nproc: bool, address_space: bool) -> list[tuple[int, int, int]]:
        """The limits of ``prlimit_args`` as ``(resource, soft, hard)`` for ``setrlimit``."""
        values: list[tuple[int, int, int]] = []
        if self.cpu_s is not None:
            soft = max(1, math.ceil(self.cpu_s))
            values.append((resource.RLIMIT_CPU, soft, soft + 1))
        if self.file_size_mb is not None:
            size = self.file_size_mb * 1024 * 1024
            values.append((resource.RLIMIT_FSIZE, size, size))
        if address_space and self.memory_mb is not None:
            size = self.memory_mb * 1024 * 1024
            values.append((resource.RLIMIT_AS, size, size))
        if nproc and self.pids is not None:
            values.append((resource.RLIMIT_NPROC, self.pids, self.pids))
        return values

    def ulimit_script(self, *, nproc: bool, address_space: bool) -> str:
        """The limits of ``prlimit_args`` as ``sh`` ``ulimit`` commands, joined by ``&&``.

        A ``sh`` that starts a command anyway (the cgroup gate or join script) sets
        them itself, which saves the ``prlimit`` exec. The values are exact: dash
        counts file sizes in 512-byte blocks and address space in KiB, and these
        limits are whole MiB. Empty when there is nothing to set.
        """
        steps: list[str] = []
        if self.cpu_s is not None:
            soft = max(1, math.ceil(self.cpu_s))  # soft first: a hard below it is EINVAL
            steps += [f"ulimit -S -t {soft}", f"ulimit -H -t {soft + 1}"]
        if self.file_size_mb is not None:
            steps.append(f"ulimit -f {self.file_size_mb * 2048}")
        if address_space and self.memory_mb is not None:
            steps.append(f"ulimit -v {self.memory_mb * 1024}")
        if nproc and self.pids is not None:
            steps.append(f"ulimit -p {self.pids}")
        return " && ".join(steps)

    def fsize_within_workspace(self) -> ResourceLimits:
        """These limits with ``file_size_mb`` no larger than ``workspace_mb`` + 1.

        Where the workspace is not on a size-limited filesystem, this bounds one file
        written during a command by the workspace budget (see ``WorkspaceWatch``).
        """
        if self.workspace_mb is None:
            return self
        cap = self.workspace_mb + 1
        if self.file_size_mb is not None and self.file_size_mb <= cap:
            return self
        return replace(self, file_size_mb=cap)


def nproc_raise(owner: tuple[int, int] | None) -> tuple[int, int, int] | None:
    """``RLIMIT_NPROC`` with the soft limit raised to the hard one, or None if not needed.

    For the sandbox user only (when the harness is root): the kernel counts the
    processes of *all* sandboxes (one host uid) against the limit bwrap starts with,
    while each sandbox is held by its own ``RLIMIT_NPROC`` inside its user namespace
    and its pids cgroup. (Raising the hard limit would need ``CAP_SYS_RESOURCE``,
    which container runtimes usually drop.)
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if owner is None or soft == hard:
        return None
    return resource.RLIMIT_NPROC, hard, hard


def nproc_argv(owner: tuple[int, int] | None) -> list[str]:
    """``prlimit`` setting ``nproc_raise``'s limit before a command, or [] if not needed."""
    raised = nproc_raise(owner)
    if raised is None:
        return []
    hard = raised[2]
    return ["prlimit", f"--nproc={'unlimited' if hard == resource.RLIM_INFINITY else hard}", "--"]


_PROBE = ResourceLimits(cpu_s=7, memory_mb=3, pids=50, file_size_mb=2)
_PROBE_WANT = {
    "Max cpu time": ("7", "8"),
    "Max file size": ("2097152", "2097152"),
    "Max address space": ("3145728", "3145728"),
    "Max processes": ("50", "50"),
}


@functools.cache
def sh_sets_rlimits() -> bool:
    """True when this host's ``/bin/sh`` sets ``ulimit_script`` limits exactly; run once.

    ``ulimit`` units and letters differ between shells (bash counts ``-f`` in KiB
    outside POSIX mode and has no ``-p`` for processes), so the script is tried
    once and the limits read back from ``/proc/self/limits``; on any mismatch the
    backends keep the ``prlimit`` exec.
    """
    script = _PROBE.ulimit_script(nproc=True, address_space=True)
    try:
        run = subprocess.run(
            ["/bin/sh", "-c", f"{script} && exec cat /proc/self/limits"],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    found = {}
    for line in run.stdout.splitlines():
        match = re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if match:
            found[match[1]] = (match[2], match[3])
    return run.returncode == 0 and all(found.get(k) == v for k, v in _PROBE_WANT.items())
