"""The harness side of the per-sandbox spawner (``_spawner.c`` where it can be built,
else ``_spawner_main``: the same protocol, see there).

Without it, each command of a root harness starts behind a gate and is moved
into a fresh cgroup (``CgroupGate``): one ``cgroup.procs`` write per command and
hierarchy, which on cgroup v1 waits for an RCU grace period (~7-11 ms after
idle). With it, one helper process per sandbox is moved into one cgroup per
sandbox (``SandboxCgroup``), once, and forks every command there: a command is
born in the cgroup. ``Spawner`` talks to the helper, ``SpawnedChild`` is a command
it started as ``_spawn.run_child`` drives it, ``spawn_child`` makes the pipes;
``_spawner_slot`` decides which command gets the helper.
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
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from toolproof.sandbox import _cgroup
from toolproof.sandbox._errors import SpawnerBroken, SpawnerLost, start_failure
from toolproof.sandbox.bwrap._exec_helper import exec_helper, native_spawner
from toolproof.sandbox.bwrap._sandbox_cgroup import SandboxCgroup

__all__ = ["SpawnedChild", "Spawner", "SpawnerBroken", "SpawnerLost", "spawn_child"]

_log = logging.getLogger(__name__)
_HELPER = Path(__file__).with_name("_spawner_main.py")
_HEADER = struct.Struct(">I")
_MAX_REPLY = 1 << 20
_REPLY_S = 30.0
#: How often a wait on the helper checks that it still runs (not exited, not stopped).
_LIVENESS_S = 0.25


def _state(pid: int) -> str | None:
    """The scheduler state of ``pid`` (``R``, ``S``, ``T`` ...), or None when it is gone."""
    try:  # read before each command: os calls, not pathlib's
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            text = os.read(fd, 4096)
        finally:
            os.close(fd)
        return text.rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


#: The C spawner could not be started once in this process: the Python one runs.
_NATIVE_FAILED = False


def _native_failed(exc: OSError) -> None:
    global _NATIVE_FAILED
    _NATIVE_FAILED = True
    _log.warning("the C spawner cannot be started (%s); the Python spawner runs instead", exc)


def _start(argv: list[str], theirs: socket.socket) -> subprocess.Popen[bytes]:
    """Start a spawner program with the socket end ``theirs`` as its only descriptor."""
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={}, cwd="/", close_fds=True, pass_fds=(theirs.fileno(),), start_new_session=True,
    )  # fmt: skip


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
        self._checked_at = 0.0
        #: Commands it started with no Python in the child (the C spawner, or the Python
        #: one through the exec helper), not a fork of the Python spawner.
        self.helped = 0
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        procs = [str(path) for path in group.procs_files]
        fd = str(theirs.fileno())
        helper = exec_helper()
        options = [] if helper is None else ["--exec-helper", helper]
        python = [sys.executable, "-I", "-S", str(_HELPER), fd, *options, *procs]
        native = None if _NATIVE_FAILED else native_spawner()
        try:
            try:
                # The C spawner: the same protocol and steps, no Python per command.
                self.proc = _start(python if native is None else [native, fd, *procs], theirs)
            except OSError as exc:
                if native is None:
                    raise
                _native_failed(exc)  # a noexec temporary directory, say: Python from now on
                self.proc = _start(python, theirs)
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

    def fault(self) -> str | None:
        """Why the helper cannot answer any more (it exited, or it is stopped), else None.

        A stopped helper (``SIGSTOP``, a debugger) would otherwise hold every wait on
        it until a timeout that the agent's tool call would be charged with.
        """
        pid = self.proc.pid
        status = self.proc.poll()
        if status is not None:
            return f"the spawner (pid {pid}) exited with status {status}"
        state = _state(pid)
        if state in ("T", "t"):
            return f"the spawner (pid {pid}) is stopped (state {state}) and cannot answer"
        self._checked_at = time.monotonic()  # ``check_alive`` need not look again so soon
        return None

    def check_alive(self) -> None:
        """Raise when :meth:`fault` finds one, at most every ``_LIVENESS_S`` seconds.

        Raises:
            SpawnerBroken: The helper exited or is stopped.
        """
        now = time.monotonic()
        if now - self._checked_at < _LIVENESS_S:
            return
        self._checked_at = now
        fault = self.fault()
        if fault is not None:
            raise SpawnerBroken(fault)

    def _wait_readable(self, timeout: float | None) -> None:
        """Wait until a message is waiting, checking the helper runs while it waits.

        Raises:
            SpawnerBroken: ``timeout`` passed, or the helper exited or is stopped.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self.readable(_LIVENESS_S if left is None else min(left, _LIVENESS_S)):
                return
            fault = self.fault()
            if fault is not None:
                raise SpawnerBroken(fault)
            if left is not None and left <= _LIVENESS_S:
                raise SpawnerBroken(f"the spawner did not answer within {timeout} s")

    def receive(self, timeout: float | None) -> dict[str, object]:
        """The next message from the helper (waiting up to ``timeout`` seconds).

        Raises:
            SpawnerBroken: It closed the socket, timed out, sent something invalid, or
                exited or stopped while it was waited for.
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
            if timeout == 0:
                if not self.readable(0):
                    raise SpawnerBroken(f"the spawner did not answer within {timeout} s")
            else:
                self._wait_readable(timeout)
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
        poller = getattr(self, "_poller", None)
        if poller is None:  # one per spawner: it is asked before and after every command
            self._poller = poller = select.poll()
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
            SandboxError: The program could not be started: ``StartRefused`` (the
                host's failure, witnessed) unless the caller's command line was too
                long (``_errors.start_failure`` decides).
            SpawnerBroken: The helper failed; nothing was started.
            SpawnerLost: The helper failed after the request went out.
        """
        self._await_ready()
        fault = self.fault()  # nothing sent yet: the command can take the other path
        if fault is not None:
            raise SpawnerBroken(fault)
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
            self.helped += reply.get("helped") is True
            return pid
        error = reply.get("error")
        if isinstance(error, str) and error.startswith("could not start '"):
            code = reply.get("errno")
            if not isinstance(code, int) or isinstance(code, bool):
                code = None  # none reported: the harness's own program, so witnessed
            raise start_failure(f"{error} (in {cwd!r})", code)
        if isinstance(error, str) and error.startswith("bad request"):
            raise SpawnerBroken(error)  # refused before any fork
        raise SpawnerLost(f"the sandbox's command spawner answered {reply!r}")

    def close(self) -> None:
        """Stop the helper (it kills what is left in its cgroup) and reap it."""
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.proc.poll() is None and self.fault() is not None:  # stopped: it cannot exit
            self.proc.kill()
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
        """True once the command's first process has exited (it was reaped).

        Raises:
            SpawnerLost: The helper exited or is stopped, so the exit can never be told.
        """
        if self.returncode is None:
            if self.spawner.readable(0):
                self._read_exit(0)
            else:
                try:
                    self.spawner.check_alive()
                except SpawnerBroken as exc:
                    raise SpawnerLost(f"the sandbox's command spawner failed: {exc}") from exc
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
