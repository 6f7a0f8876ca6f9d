"""The cgroup of one sandbox, reused by all its commands (the spawner lives in it).

See ``_spawner``: with a spawner, commands are born in the sandbox's cgroup instead
of each moving into a cgroup of its own. ``SandboxCgroup`` is a ``CommandCgroup``
that can be reused: limits rewritten and event counters re-based per command, and
the helper left alone when the rest is killed.
"""

from __future__ import annotations

import os

from toolproof.sandbox._cgroup import CgroupSupport, CommandCgroup, _read

__all__ = ["SandboxCgroup"]


class SandboxCgroup(CommandCgroup):
    """A cgroup reused by every command of one sandbox, the spawner helper in it.

    ``begin`` sets the limits for the next command and takes the event counters as
    they are, so ``pids_hit`` and ``oom_killed`` report that command's events only;
    ``kill_all`` and ``pids`` leave the helper (``keep``) alone.
    """

    #: Never ``cgroup.kill``: it would kill the helper too; members are killed one by one.
    kill_whole = False

    def __init__(self, support: CgroupSupport, *, pids: int | None, memory_mb: int | None) -> None:
        """Create the directories and write the limits (see ``CommandCgroup``)."""
        super().__init__(support, pids=pids, memory_mb=memory_mb)
        self._support = support
        self.keep: int | None = None
        self.limits = (pids, memory_mb)
        self._base_pids = self._base_oom = 0
        self._emptied = False
        #: The OOM-kill count read once the cgroup was emptied: the next command's base.
        self._next_oom: int | None = None

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """Kill every member but the helper (see ``CommandCgroup.kill_all``).

        Once it found the cgroup empty with ``pids.max`` at 0, nothing can be born in
        it until ``begin`` (the helper forks only when asked to), so a second call for
        the same command (``Lease.release`` after ``run_child``) reads nothing again.
        """
        if self._emptied and self.keep is not None:  # once the helper is gone: a real pass
            return True
        empty = super().kill_all(timeout_s)
        self._emptied = empty and self.frozen
        return empty

    def pids(self) -> set[int]:
        """Process ids in the cgroup, without the helper.

        One ``cgroup.procs`` is read: every process is born in all of the directories
        (the helper's), and only root could move one out of one of them.
        """
        for _, path in self._dirs.values():
            return {int(p) for p in _read(f"{path}/cgroup.procs").split()} - {self.keep}
        return set()

    def _oom_count(self) -> int:
        if not self.has("memory"):
            return 0
        if self._dirs["memory"][0] == 2:
            return self._counter("memory", "memory.events", "oom_kill")
        return self._counter("memory", "memory.oom_control", "oom_kill")

    def begin(self, pids: int | None, memory_mb: int | None) -> bool:
        """Make the cgroup ready for a command with these limits; False if it cannot be.

        ``pids.max`` is written every time (``kill_all`` froze it at 0); the memory
        limit only when it changes.

        Raises:
            OSError: A limit could not be written (the cgroup is then unusable).
        """
        for controller, value in (("pids", pids), ("memory", memory_mb)):
            if (value is not None and self._support.has(controller)) != self.has(controller):
                return False  # a controller would be missing or extra
        if pids is not None:
            # The helper counts too.
            fd = os.open(f"{self._dirs['pids'][1]}/pids.max", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, str(pids + 1).encode())
            finally:
                os.close(fd)
        if memory_mb is not None and memory_mb != self.limits[1]:
            self._set_memory(memory_mb, self.limits[1] or 0)
        self.limits = (pids, memory_mb)
        known_oom, self._next_oom = self._next_oom, None
        self._frozen_events = None
        self.frozen = self._emptied = False
        self._base_pids = self._counter("pids", "pids.events", "max")
        # Emptied since that read, the cgroup held only the helper, whom no OOM kill
        # picks (oom_score_adj -1000): the count cannot have moved.
        self._base_oom = self._oom_count() if known_oom is None else known_oom
        return True

    def _set_memory(self, new_mb: int, old_mb: int) -> None:
        version, path = self._dirs["memory"]
        if version == 2:
            (path / "memory.max").write_text(str(new_mb * 1024 * 1024))
            return
        # v1: memory.limit_in_bytes may never exceed memory.memsw.limit_in_bytes.
        names = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
        for name in names[::-1] if new_mb > old_mb else names:
            if name.startswith("memory.memsw") and not (path / name).exists():
                continue
            (path / name).write_text(str(new_mb * 1024 * 1024))

    def pids_hit(self) -> bool:
        """True once a fork failed at ``pids.max`` during the current command."""
        if self._frozen_events is not None:
            return self._frozen_events > self._base_pids
        return self._counter("pids", "pids.events", "max") > self._base_pids

    def oom_killed(self) -> bool:
        """True once the kernel OOM-killed a process of the current command."""
        count = self._oom_count()
        if self._emptied:  # nothing is left to kill: also the next command's base
            self._next_oom = count
        return count > self._base_oom

    def shmem_bytes(self) -> int:
        """Bytes of tmpfs pages charged to this cgroup (0 without a memory cgroup)."""
        if not self.has("memory"):
            return 0
        return self._counter("memory", "memory.stat", "shmem")

    def held_bytes(self) -> int:
        """Bytes charged to this cgroup that reclaim cannot free (0 without a memory cgroup).

        All it is charged (``memory.current``, v1 ``memory.usage_in_bytes``, kernel
        memory included) but the page cache of files other than tmpfs (v2: and
        reclaimable slab), which the kernel frees before it OOM-kills. With only the
        helper left, that is the helper's few pages plus whatever a command left that
        outlives it: tmpfs pages, and the inodes and dentries of workspace files (an
        inode bomb leaves ~1 KiB a file, which no tmpfs counter shows).
        """
        if not self.has("memory"):
            return 0
        version, path = self._dirs["memory"]
        stat = {}
        for line in _read(f"{path}/memory.stat").splitlines():
            name, _, value = line.partition(" ")
            if value.isdigit():
                stat[name] = int(value)
        usage = _read(f"{path}/{'memory.current' if version == 2 else 'memory.usage_in_bytes'}")
        if not usage.strip().isdigit():
            return 0
        if version == 2:  # "file" counts tmpfs pages too
            freeable = stat.get("file", 0) + stat.get("slab_reclaimable", 0)
        else:  # "cache" counts tmpfs pages too
            freeable = stat.get("cache", 0)
        return max(0, int(usage) - freeable + stat.get("shmem", 0))
