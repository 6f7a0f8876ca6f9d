"""Which command gets the sandbox's spawner, and when a spawner is started or replaced.

``SpawnerSlot`` owns the helper and cgroup of one ``Sandbox`` (see ``_spawner``): the
first ``lease`` starts a helper in the background, and once it is ready ``lease``
hands it to one command at a time; until then, and for a second command running at
the same moment, the command takes the per-command path. So nothing waits for the
helper's start-up, a cgroup only ever holds the helper and one command's tree, and
killing "everything but the helper" after a command is exact. ``release`` kills
what the command left. The helper is replaced when its cgroup keeps more than
``_SHMEM_RECYCLE`` of tmpfs pages charged (files a command wrote to the workspace
tmpfs stay charged to the cgroup that wrote them; removing the cgroup hands them to
its parent, as after a per-command cgroup), or more than ``_HELD_RECYCLE`` that
reclaim cannot free in all (the inodes and dentries of workspace files are kernel
memory charged the same way: an inode bomb left them, and every later command ran
out of memory).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from toolproof.sandbox._cgroup import CgroupSupport
from toolproof.sandbox._errors import SpawnerBroken
from toolproof.sandbox._spawn import Child
from toolproof.sandbox.bwrap._sandbox_cgroup import SandboxCgroup
from toolproof.sandbox.bwrap._spawner import Spawner, spawn_child

__all__ = ["Lease", "SpawnerSlot"]

_log = logging.getLogger(__name__)
#: Bytes of tmpfs (shmem) pages left charged to the cgroup after which it is replaced.
_SHMEM_RECYCLE = 4 * 1024 * 1024
#: Bytes reclaim cannot free (``held_bytes``: the helper's own ~1 MiB included) left
#: charged to the cgroup with only the helper alive, after which it is replaced.
_HELD_RECYCLE = 8 * 1024 * 1024


class Lease:
    """One command's use of the slot's spawner (``SpawnerSlot.lease``): the ``Lease``
    that ``_launch.Launcher`` drives."""

    def __init__(self, slot: SpawnerSlot, spawner: Spawner) -> None:
        self.slot, self.spawner, self.group = slot, spawner, spawner.group

    def start(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        user: tuple[int, int],
        stdin: bool,
        rlimits: list[tuple[int, int, int]],
        pass_fds: Sequence[int],
    ) -> Child:
        """Start the command through the spawner (see ``_spawner.spawn_child``)."""
        return spawn_child(self.spawner, argv, env=env, cwd=cwd, user=user, stdin=stdin,
                           rlimits=rlimits, pass_fds=pass_fds)  # fmt: skip

    def release(self) -> None:
        """Kill what the command left and hand the spawner back."""
        self.slot._give_back(self.spawner)

    def discard(self, why: str) -> None:
        """The spawner failed during this lease: stop it; the command falls back."""
        self.slot.discard(self, why)


class SpawnerSlot:
    """The spawner of one sandbox, made on first use and handed to one command at a time."""

    def __init__(self, support: CgroupSupport) -> None:
        """``support`` says where the sandbox cgroup may be created."""
        self._support = support
        self._busy = threading.Lock()
        self._state = threading.Lock()
        self._spawner: Spawner | None = None
        self._closed = False
        self._failures = 0

    def lease(self, pids: int | None, memory_mb: int | None) -> Lease | None:
        """The spawner for a command with these limits, or None: take the per-command path.

        None when another command holds it, the sandbox is closed, no cgroup can be
        written here, or the spawner failed to start twice.
        """
        if self._failures >= 2 or not self._busy.acquire(blocking=False):
            return None
        try:
            spawner = self._ready(pids, memory_mb)
        except BaseException:
            self._busy.release()
            raise
        if spawner is None:
            self._busy.release()
            return None
        return Lease(self, spawner)

    def _ready(self, pids: int | None, memory_mb: int | None) -> Spawner | None:
        """The helper if it is ready for this command; else None, starting one if needed.

        A helper is started on the sandbox's first command and used once it is
        ready: no command waits for its start-up (the first ones take the
        per-command path), and a sandbox that runs one command costs one
        background start.
        """
        with self._state:
            if self._closed:
                return None
        spawner = self._spawner
        if spawner is not None:
            try:
                if spawner.proc.poll() is None:
                    if not spawner.ready_now():
                        return None  # still starting: this command takes the other path
                    if spawner.group.begin(pids, memory_mb):
                        return spawner
            except OSError as exc:
                _log.warning("could not set the sandbox cgroup's limits: %s", exc)
            except SpawnerBroken as exc:
                self._failures += 1
                _log.warning("the sandbox's command spawner failed to start: %s", exc)
            self._drop()
        self._new(pids, memory_mb, wait=False)
        return None

    def _new(self, pids: int | None, memory_mb: int | None, *, wait: bool) -> Spawner | None:
        """A new helper in a new sandbox cgroup (the caller holds ``_busy``), or None."""
        group: SandboxCgroup | None = None
        try:
            group = SandboxCgroup(self._support, pids=pids, memory_mb=memory_mb)
            if not group.procs_files:
                group.remove()
                self._failures = 2  # nothing to write here: never try again
                return None
            if not group.begin(pids, memory_mb):
                group.remove()
                return None
            self._spawner = spawner = Spawner(group, wait=wait)
            return spawner
        except (OSError, SpawnerBroken) as exc:
            self._failures += 1
            _log.warning("commands fall back to a cgroup each: %s", exc)
            if group is not None:
                group.remove()
            return None

    def _give_back(self, spawner: Spawner) -> None:
        try:
            spawner.group.kill_all()
            group = spawner.group
            if group.shmem_bytes() > _SHMEM_RECYCLE or group.held_bytes() > _HELD_RECYCLE:
                self._drop()
                self._new(*spawner.group.limits, wait=False)  # ready for the next one
        finally:
            self._busy.release()
        with self._state:
            closed = self._closed
        if closed:
            self.close()

    def discard(self, lease: Lease, why: str) -> None:
        """The helper failed during ``lease``: stop it; the command falls back."""
        _log.warning("the sandbox's command spawner failed (%s); starting a new one", why)
        self._failures += 1
        self._drop()
        self._busy.release()

    def _drop(self) -> None:
        spawner, self._spawner = self._spawner, None
        if spawner is not None:
            spawner.close()
            spawner.group.keep = None
            spawner.group.remove()

    def close(self) -> None:
        """Stop the helper and remove the cgroup, now or when the running command ends."""
        with self._state:
            self._closed = True
        if self._busy.acquire(blocking=False):
            try:
                self._drop()
            finally:
                self._busy.release()
