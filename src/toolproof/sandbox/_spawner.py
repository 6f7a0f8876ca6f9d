"""The harness side of the per-sandbox spawner (see ``_spawner_main``).

Without it, each command of a root harness starts behind a gate and is moved
into a fresh cgroup (``CgroupGate``): one ``cgroup.procs`` write per command and
hierarchy, which on cgroup v1 waits for an RCU grace period (~7-11 ms after
idle). With it, one helper process per sandbox is moved into one cgroup per
sandbox, once, and forks every command there: a command is born in the cgroup.

``SpawnerSlot`` owns that helper and cgroup for a ``Sandbox``: the first ``lease``
starts it in the background, and once it is ready ``lease`` hands it to one command
at a time (until then, and for a second command running at the same moment, the
command takes the per-command path; so nothing waits for the helper's start-up, a
cgroup only ever holds the helper and one command's tree, and killing "everything
but the helper" after a command is exact).
``release`` kills what the command left. The helper is replaced when its cgroup
keeps more than ``_SHMEM_RECYCLE`` of tmpfs pages charged (files a command wrote
to the workspace tmpfs stay charged to the cgroup that wrote them; removing the
cgroup hands them to its parent, as after a per-command cgroup).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from toolproof.sandbox import _cgroup
from toolproof.sandbox._cgroup import CgroupSupport, CommandCgroup
from toolproof.sandbox._errors import SandboxError

__all__ = [
    "Lease",
    "SandboxCgroup",
    "SpawnedChild",
    "Spawner",
    "SpawnerBroken",
    "SpawnerLost",
    "SpawnerSlot",
    "spawn_child",
]

_log = logging.getLogger(__name__)
_HELPER = Path(__file__).with_name("_spawner_main.py")
_HEADER = struct.Struct(">I")
_MAX_REPLY = 1 << 20
_REPLY_S = 30.0
#: Bytes of tmpfs (shmem) pages left charged to the cgroup after which it is replaced.
_SHMEM_RECYCLE = 4 * 1024 * 1024


class SpawnerBroken(Exception):
    """The helper did not answer as it should; nothing was started."""


class SpawnerLost(SandboxError):
    """The helper failed after a request went out: the command may have started."""


class SandboxCgroup(CommandCgroup):
    """A cgroup reused by every command of one sandbox, the spawner helper in it.

    ``begin`` sets the limits for the next command and takes the event counters as
    they are, so ``pids_hit`` and ``oom_killed`` report that command's events only;
    ``kill_all`` and ``pids`` leave the helper (``keep``) alone.
    """

    def __init__(self, support: CgroupSupport, *, pids: int | None, memory_mb: int | None) -> None:
        """Create the directories and write the limits (see ``CommandCgroup``)."""
        super().__init__(support, pids=pids, memory_mb=memory_mb)
        self._support = support
        self.keep: int | None = None
        self.limits = (pids, memory_mb)
        self._base_pids = self._base_oom = 0

    def pids(self) -> set[int]:
        """Process ids in the cgroup, without the helper."""
        return super().pids() - {self.keep}

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
            (self._dirs["pids"][1] / "pids.max").write_text(str(pids + 1))
        if memory_mb is not None and memory_mb != self.limits[1]:
            self._set_memory(memory_mb, self.limits[1] or 0)
        self.limits = (pids, memory_mb)
        self._frozen_events = None
        self._base_pids = self._counter("pids", "pids.events", "max")
        self._base_oom = self._oom_count()
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
        return self._oom_count() > self._base_oom

    def shmem_bytes(self) -> int:
        """Bytes of tmpfs pages charged to this cgroup (0 without a memory cgroup)."""
        if not self.has("memory"):
            return 0
        return self._counter("memory", "memory.stat", "shmem")


class Spawner:
    """One helper process, moved into ``group`` once, that forks commands there."""

    def __init__(self, group: SandboxCgroup, *, wait: bool = True) -> None:
        """Start the helper and move it into ``group``.

        Args:
            group: The sandbox's cgroup.
            wait: Wait until it is ready; else the first ``start`` waits (so its
                Python start-up overlaps whatever the harness does meanwhile).

        Raises:
            SpawnerBroken: It could not be started, moved or did not answer.
        """
        self.group = group
        self._buffer = bytearray()
        self._pending = True
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        procs = [str(path) for path in group.procs_files]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_HELPER), str(theirs.fileno()), *procs],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={}, cwd="/", close_fds=True, pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            ours.close()
            raise SpawnerBroken(f"could not start the spawner: {exc}") from exc
        finally:
            theirs.close()
        try:
            _cgroup.join_pid(group.procs_files, self.proc.pid)  # the sandbox's one attach
        except OSError as exc:
            self.close()
            raise SpawnerBroken(f"the spawner did not start: {exc}") from exc
        group.keep = self.proc.pid
        if wait:
            self._await_ready()

    def ready_now(self) -> bool:
        """True once the helper said it is ready (never waits).

        Raises:
            SpawnerBroken: It exited or said something else (it is stopped then).
        """
        if self._pending and self.readable(0):
            self._await_ready()
        return not self._pending

    def _await_ready(self) -> None:
        """Wait for the helper's first message (once).

        Raises:
            SpawnerBroken: It exited or said something else (it is stopped then).
        """
        if not self._pending:
            return
        try:
            ready = self.receive(_REPLY_S)
            if ready.get("ready") != self.proc.pid:
                raise SpawnerBroken(f"the spawner said {ready!r} instead of ready")
        except SpawnerBroken as exc:
            self.close()
            raise SpawnerBroken(f"the spawner did not start: {exc}") from exc
        self._pending = False

    def receive(self, timeout: float | None) -> dict[str, object]:
        """The next message from the helper (waiting up to ``timeout`` seconds).

        Raises:
            SpawnerBroken: It closed the socket, timed out or sent something invalid.
        """
        while True:
            if len(self._buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(self._buffer)
                if size > _MAX_REPLY:
                    raise SpawnerBroken(f"the spawner sent a frame of {size} bytes")
                if len(self._buffer) >= _HEADER.size + size:
                    body = bytes(self._buffer[_HEADER.size : _HEADER.size + size])
                    del self._buffer[: _HEADER.size + size]
                    try:
                        message = json.loads(body)
                    except ValueError as exc:
                        raise SpawnerBroken(f"the spawner sent {body[:80]!r}") from exc
                    if not isinstance(message, dict):
                        raise SpawnerBroken(f"the spawner sent {message!r}")
                    return message
            if not self.readable(timeout):
                raise SpawnerBroken(f"the spawner did not answer within {timeout} s")
            try:
                chunk = self.sock.recv(65536)
            except OSError as exc:
                raise SpawnerBroken(f"the spawner's socket failed: {exc}") from exc
            if not chunk:
                raise SpawnerBroken("the spawner exited")
            self._buffer.extend(chunk)

    def readable(self, timeout: float | None) -> bool:
        """True when a message (or end of file) is waiting, within ``timeout`` seconds."""
        if len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if len(self._buffer) >= _HEADER.size + size:
                return True
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        return bool(poller.poll(None if timeout is None else timeout * 1000))

    def send(self, message: Mapping[str, object], fds: list[int]) -> None:
        """Send one request with ``fds`` attached.

        Raises:
            SpawnerBroken: The socket is gone.
        """
        body = json.dumps(dict(message)).encode()
        frame = _HEADER.pack(len(body)) + body
        try:
            sent = socket.send_fds(self.sock, [frame], fds)
            if sent < len(frame):
                self.sock.sendall(frame[sent:])
        except OSError as exc:
            raise SpawnerBroken(f"could not reach the spawner: {exc}") from exc

    def start(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        user: tuple[int, int],
        rlimits: list[tuple[int, int, int]],
        fds: Mapping[int, int],
    ) -> int:
        """Start one command; its pid once it has exec'd.

        Args:
            argv: Program and arguments (searched on ``env["PATH"]``).
            env: The complete environment.
            cwd: Host directory to start in.
            user: Host (uid, gid) it runs as, with no supplementary groups.
            rlimits: (resource, soft, hard) set before the uid drop.
            fds: Descriptor number in the command -> harness descriptor to put there.

        Raises:
            SandboxError: The program could not be started (as ``run_tree`` says it).
            SpawnerBroken: The helper failed; nothing was started.
            SpawnerLost: The helper failed after the request went out.
        """
        self._await_ready()
        request = {
            "argv": argv, "env": dict(env), "cwd": cwd, "uid": user[0], "gid": user[1],
            "rlimits": [list(r) for r in rlimits], "fds": list(fds),
        }  # fmt: skip
        self.send(request, list(fds.values()))
        try:
            reply = self.receive(_REPLY_S)
        except SpawnerBroken as exc:
            raise SpawnerLost(f"the sandbox's command spawner failed: {exc}") from exc
        pid = reply.get("started")
        if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
            return pid
        error = reply.get("error")
        if isinstance(error, str) and error.startswith("could not start '"):
            raise SandboxError(f"{error} (in {cwd!r})")
        if isinstance(error, str) and error.startswith("bad request"):
            raise SpawnerBroken(error)  # refused before any fork
        raise SpawnerLost(f"the sandbox's command spawner answered {reply!r}")

    def close(self) -> None:
        """Stop the helper (it kills what is left in its cgroup) and reap it."""
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class SpawnedChild:
    """A command the spawner started: what ``_spawn.run_child`` drives."""

    def __init__(self, spawner: Spawner, pid: int, pipes: tuple[int | None, int, int]) -> None:
        """Wrap the harness ends of the command's stdin (or None), stdout and stderr."""
        self.spawner, self.pid = spawner, pid
        self.returncode: int | None = None
        stdin, stdout, stderr = pipes
        # Owned by this object and closed in ``close`` (run_child's finally).
        self.stdin: IO[bytes] | None = None
        if stdin is not None:
            self.stdin = open(stdin, "wb", buffering=0)  # noqa: SIM115 - see above
        self.stdout: IO[bytes] | None = open(stdout, "rb", buffering=0)  # noqa: SIM115
        self.stderr: IO[bytes] | None = open(stderr, "rb", buffering=0)  # noqa: SIM115

    @property
    def exit_fd(self) -> int | None:
        """Readable when the spawner has news (the exit) for this command."""
        return None if self.returncode is not None else self.spawner.sock.fileno()

    def _take(self, timeout: float | None) -> None:
        message = self.spawner.receive(timeout)
        status = message.get("status")
        if message.get("exit") != self.pid or not isinstance(status, int):
            raise SpawnerBroken(f"the spawner sent {message!r} while {self.pid} ran")
        self.returncode = os.waitstatus_to_exitcode(status)

    def exited(self) -> bool:
        """True once the command's first process has exited (it was reaped)."""
        if self.returncode is None and self.spawner.readable(0):
            self._read_exit(0)
        return self.returncode is not None

    def _read_exit(self, timeout: float | None) -> None:
        try:
            self._take(timeout)
        except SpawnerBroken as exc:  # the lease is discarded: a fresh helper next time
            raise SpawnerLost(f"the sandbox's command spawner failed: {exc}") from exc

    def wait(self) -> int:
        """The exit status (negative for a signal), waiting for it if need be."""
        if self.returncode is None:
            self._read_exit(_REPLY_S)
        assert self.returncode is not None
        return self.returncode

    def kill(self, alive: bool = True) -> None:
        """SIGKILL the whole tree: everything in the cgroup but the helper."""
        self.spawner.group.kill_all()

    def stop(self) -> None:
        """Kill the tree if it still runs (``Sandbox.close``)."""
        if self.returncode is None:
            self.spawner.group.kill_all()

    def close(self) -> None:
        """Close the harness's pipe ends."""
        for pipe in (self.stdin, self.stdout, self.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class Lease:
    """One command's use of the slot's spawner (``SpawnerSlot.lease``)."""

    def __init__(self, slot: SpawnerSlot, spawner: Spawner) -> None:
        self.slot, self.spawner, self.group = slot, spawner, spawner.group

    def release(self) -> None:
        """Kill what the command left and hand the spawner back."""
        self.slot._give_back(self.spawner)


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
            if spawner.group.shmem_bytes() > _SHMEM_RECYCLE:
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


def spawn_child(
    spawner: Spawner,
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    user: tuple[int, int],
    stdin: bool,
    rlimits: list[tuple[int, int, int]],
    pass_fds: Sequence[int] = (),
) -> SpawnedChild:
    """Start ``argv`` through ``spawner`` with fresh pipes (see ``Spawner.start``).

    Args:
        spawner: The sandbox's spawner, leased for this command.
        argv: Program and arguments.
        env: The complete environment.
        cwd: Host directory to start in.
        user: Host (uid, gid) it runs as.
        stdin: Give it a pipe for stdin (else /dev/null).
        rlimits: (resource, soft, hard) set before the uid drop.
        pass_fds: Harness descriptors it inherits at the same numbers.
    """
    theirs: dict[int, int] = {}
    ours: list[int] = []
    try:
        if stdin:
            read, write = os.pipe()
            theirs[0], stdin_fd = read, write
            ours.append(write)
        else:
            theirs[0], stdin_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), None
        out_r, theirs[1] = os.pipe()
        ours.append(out_r)
        err_r, theirs[2] = os.pipe()
        ours.append(err_r)
        for fd in pass_fds:
            theirs[fd] = fd
        pid = spawner.start(argv, env=env, cwd=cwd, user=user, rlimits=rlimits, fds=theirs)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for number, fd in theirs.items():
            if number <= 2:
                os.close(fd)
    return SpawnedChild(spawner, pid, (stdin_fd, out_r, err_r))
