"""Decide which limit, if any, a finished command ran into.

The evidence, strongest first: the harness stopped the command itself (wall time,
output, a pids or OOM event seen while it ran); the cgroup's event counters; the
exit status a shell reports for ``SIGXCPU`` (152) and ``SIGXFSZ`` (153); and, only
where no cgroup gives a signal, the error text of a failing command (``MemoryError``,
``Cannot fork``, ``File too large``). The text rules can be fooled by a command that
prints those words (fork errors count even when the command exits 0, memory and
file-size errors only when it fails); docs/isolation.md lists them.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path

from toolproof.sandbox._limits import ResourceLimits

__all__ = ["WorkspaceWatch", "classify", "workspace_bytes"]

_MEMORY_TEXT = (
    "MemoryError",
    "Cannot allocate memory",
    "out of memory",
    "std::bad_alloc",
    "memory exhausted",
)
_FORK_TEXT = ("Cannot fork", "fork: Resource temporarily unavailable", "fork: retry", "can't fork")
_FSIZE_TEXT = ("File too large", "File size limit exceeded")


def classify(
    limits: ResourceLimits,
    *,
    returncode: int | None,
    stopped: str | None,
    stderr: bytes,
    truncated: bool = False,
    pids_event: bool = False,
    oom_event: bool = False,
    memory_by_text: bool = False,
    pids_by_text: bool = False,
) -> str | None:
    """The name of the limit a command hit, or None.

    Args:
        limits: The limits the command ran under.
        returncode: Its exit status (``128 + N`` for signal ``N``), None if stopped.
        stopped: The reason the harness stopped it, if it did.
        stderr: What it wrote to stderr (only the tail is read).
        truncated: Its output passed the cap (even though it exited by itself).
        pids_event: A pids cgroup recorded a refused fork.
        oom_event: A memory cgroup (or the container engine) recorded an OOM kill.
        memory_by_text: Memory is limited by ``RLIMIT_AS``, so allocation errors in
            the output of a failing command count as the memory limit.
        pids_by_text: Processes are limited without a cgroup, so fork errors in the
            output count as the pids limit.
    """
    tail = stderr[-8192:].decode("utf-8", errors="replace")
    forks = pids_by_text and limits.pids is not None and any(t in tail for t in _FORK_TEXT)
    if stopped == "wall_time" and (pids_event or forks):
        return "pids"  # a fork bomb held at the limit spins until the deadline
    if stopped is not None:
        return stopped
    if oom_event:
        return "memory"
    if pids_event:
        return "pids"
    if limits.cpu_s is not None and returncode == 128 + signal.SIGXCPU:
        return "cpu"
    if limits.file_size_mb is not None and returncode == 128 + signal.SIGXFSZ:
        return "file_size"
    if truncated:
        return "output"
    if forks:  # a refused fork rarely fails the parent, so any exit status counts
        return "pids"
    if not returncode:
        return None
    if limits.file_size_mb is not None and any(t in tail for t in _FSIZE_TEXT):
        return "file_size"
    if memory_by_text and limits.memory_mb is not None and any(t in tail for t in _MEMORY_TEXT):
        return "memory"
    return None


def workspace_bytes(root: Path | str, before_listing: Callable[[str], None] | None = None) -> int:
    """Apparent size of all regular files under ``root``, hard links counted once.

    Symbolic links are not followed, so a link to a large host file costs nothing.
    Apparent size (not blocks) is used because a sparse file becomes real bytes
    as soon as the workspace is copied or snapshotted. ``before_listing`` is called with
    each directory before it is listed (``_sizewatch`` watches it there).
    """
    total, seen, todo = 0, set(), [str(root)]
    while todo:
        directory = todo.pop()
        if before_listing is not None:
            before_listing(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                todo.append(entry.path)
            elif stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_size
    return total


class WorkspaceWatch:
    """Measures the workspace now and then while a command runs (no size-limited fs).

    Where the workspace cannot be put on its own tmpfs, this (with ``RLIMIT_FSIZE``
    capped at the budget) is the best equivalent: the command is stopped soon after
    the workspace passes ``budget_mb``. The walk costs time on big trees, so it runs
    at most every ``min_interval_s`` and keeps its own share of the time under ~5%.
    """

    def __init__(self, root: Path, budget_mb: int, min_interval_s: float = 0.25) -> None:
        """Watch ``root`` against ``budget_mb`` MiB."""
        self.root, self.limit, self.min_interval_s = root, budget_mb * 1024 * 1024, min_interval_s
        self._next = time.monotonic() + min_interval_s

    def __call__(self) -> str | None:
        """``"workspace_size"`` once the workspace is over the budget, else None."""
        now = time.monotonic()
        if now < self._next:
            return None
        over = workspace_bytes(self.root) > self.limit
        took = time.monotonic() - now
        self._next = time.monotonic() + max(self.min_interval_s, 20 * took)
        return "workspace_size" if over else None
