"""Run one process tree to completion under a wall-clock deadline and an output cap.

This is the loop every backend shares: start the process in its own session,
pump stdin/stdout/stderr without threads, watch the cgroup for limit events,
and kill the whole tree when the command ends, runs out of time or floods the
output. No ``preexec_fn`` is used, so it is safe to call from many threads.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol

from toolproof.sandbox._cgroup import CommandCgroup
from toolproof.sandbox._errors import SandboxError, start_failure

__all__ = ["Child", "Outcome", "kill_tree", "run_child", "run_tree"]

_POLL_MAX_S = 0.05
_DRAIN_S = 1.0
#: The cgroup's event files are read at most this often while a command runs (a
#: short command's loop wakes up several times; its events are read once it ends).
_EVENTS_EVERY_S = 0.02


@dataclass
class Outcome:
    """What the process tree did, before any interpretation.

    Attributes:
        returncode: Exit status as a shell reports it (``128 + N`` for signal ``N``),
            or None when ``stopped`` is set.
        stdout: Captured bytes (at most ``output_bytes`` together with stderr).
        stderr: Captured bytes.
        duration_s: Seconds from when the command was let go (after ``on_start``)
            until the tree was gone.
        stopped: Why the harness killed the tree, if it did: ``"wall_time"``,
            ``"output"``, ``"pids"`` or ``"memory"``.
        truncated: More output arrived than was kept (also after a normal exit).
    """

    returncode: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    stopped: str | None
    truncated: bool = False


def _descendants(root: int) -> list[int]:
    """Pids below ``root`` found in /proc (best effort: the tree may change meanwhile)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid: int, group: CommandCgroup | None, *, alive: bool = True) -> None:
    """SIGKILL the process group of ``pid``, its descendants and its cgroup.

    Args:
        pid: The session leader the tree was started as (also its process group id);
            it must not have been reaped yet, so the id cannot have been reused.
        group: The command's cgroup, which also catches processes that left the
            process group (``setsid``) and were re-parented.
        alive: False when ``pid`` has exited: its children were re-parented already,
            so /proc is not searched for them.
    """
    doomed = _descendants(pid) if alive and group is None else []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for child in doomed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
    if group is not None:
        group.kill_all()


def _exited(pid: int) -> bool:
    """True when ``pid`` has exited, without reaping it (so its pgid stays reserved)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid != 0


def _limit_event(
    now: float, deadline: float, group: CommandCgroup | None, events: bool = True
) -> str | None:
    """The limit that makes the harness stop the command now, if any.

    ``events``: read the cgroup's event files too (throttled by the caller).
    """
    if now >= deadline:
        return "wall_time"
    if not events:
        return None
    if group is not None and group.pids_hit():
        return "pids"
    if group is not None and group.oom_killed():
        return "memory"
    return None


class Child(Protocol):
    """A started command as ``run_child`` drives it: a ``Popen`` or a spawner's child.

    Attributes:
        pid: Its first process (the session leader).
        stdin: The harness's end of its stdin pipe, or None (it reads /dev/null).
        stdout: The harness's end of its stdout pipe.
        stderr: The harness's end of its stderr pipe.
    """

    pid: int
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    @property
    def exit_fd(self) -> int | None:
        """A descriptor that becomes readable when it exits, or None."""

    def exited(self) -> bool:
        """True once its first process exited (without losing the exit status)."""

    def wait(self) -> int:
        """Its exit status, ``Popen`` style (``-N`` for signal ``N``), waiting if need be."""

    def kill(self, alive: bool = True) -> None:
        """SIGKILL the whole tree (``alive``: False once the first process exited)."""

    def stop(self) -> None:
        """Kill the tree if it still runs (the sandbox is being closed)."""

    def close(self) -> None:
        """Release what the harness holds for it (pipes, descriptors)."""


class _PopenChild:
    """A ``Popen`` started by ``run_tree`` as a ``Child``."""

    def __init__(self, proc: subprocess.Popen[bytes], group: CommandCgroup | None) -> None:
        self.proc, self.group, self.pid = proc, group, proc.pid
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr
        self._pidfd = _pidfd(proc.pid)

    @property
    def exit_fd(self) -> int | None:
        return self._pidfd

    def exited(self) -> bool:
        return _exited(self.pid)

    def wait(self) -> int:
        return self.proc.wait()

    def kill(self, alive: bool = True) -> None:
        kill_tree(self.pid, self.group, alive=alive)

    def stop(self) -> None:
        if self.proc.returncode is None:
            kill_tree(self.pid, None)

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class _Pump:
    """Moves bytes between the harness and the child's pipes, keeping at most a cap."""

    def __init__(self, proc: Child, stdin: bytes | None, cap: int) -> None:
        self.proc, self.cap = proc, cap
        self.out = {"stdout": bytearray(), "stderr": bytearray()}
        self.overflow = False
        self._pending = memoryview(stdin or b"")
        self._exit_watched = 0  # 1 while the exit descriptor is registered too
        # select.poll itself: one system call per wait, none to set up or tear down, and
        # none of the selectors module's per-call bookkeeping (this loop runs per command).
        self._poll = select.poll()
        self._names: dict[int, str] = {}  # descriptor -> "stdout", "stderr", "stdin", "exit"
        assert proc.stdout is not None and proc.stderr is not None
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            os.set_blocking(pipe.fileno(), False)
            self._watch(pipe.fileno(), select.POLLIN, name)
        if proc.stdin is not None:
            if self._pending:
                os.set_blocking(proc.stdin.fileno(), False)
                self._watch(proc.stdin.fileno(), select.POLLOUT, "stdin")
            else:
                proc.stdin.close()

    def _watch(self, fd: int, events: int, name: str) -> None:
        self._poll.register(fd, events)
        self._names[fd] = name

    def _unwatch(self, fd: int) -> None:
        """Stop watching ``fd`` (KeyError if it was not watched)."""
        del self._names[fd]
        self._poll.unregister(fd)

    def watch_exit(self, pidfd: int) -> None:
        """Also wake ``step`` when the process behind ``pidfd`` exits (no polling lag)."""
        self._watch(pidfd, select.POLLIN, "exit")
        self._exit_watched = 1

    @property
    def open(self) -> bool:
        """True while a pipe is still being read or written (asked every loop: a count)."""
        return len(self._names) > self._exit_watched

    def step(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds and move whatever bytes are ready."""
        for fd, _ in self._poll.poll(max(0, math.ceil(timeout * 1000))):
            name = self._names.get(fd)
            if name is None:  # unwatched by an earlier event of this same wait
                continue
            if name == "exit":  # seen once; the caller checks ``_exited``
                self._unwatch(fd)
                self._exit_watched = 0
                continue
            if name == "stdin":  # writable, or its reader is gone (then the write fails)
                self._feed(fd)
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                self._unwatch(fd)
                continue
            room = self.cap - len(self.out["stdout"]) - len(self.out["stderr"])
            self.out[name].extend(chunk[: max(room, 0)])
            self.overflow = self.overflow or len(chunk) > room

    def _feed(self, fd: int) -> None:
        try:
            written = os.write(fd, self._pending[:65536])
        except BlockingIOError:
            return
        except OSError:  # the command closed its stdin or exited: drop the rest
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            self.stop_feeding()

    def stop_feeding(self) -> None:
        """Stop writing stdin and close it."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(KeyError):
                self._unwatch(self.proc.stdin.fileno())
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def close(self) -> None:
        """Release the selector and every pipe."""
        self.stop_feeding()
        self._names.clear()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def run_tree(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    stdin: bytes | None,
    wall_s: float,
    output_bytes: int,
    group: CommandCgroup | None = None,
    on_start: Callable[[Child], None] | None = None,
    pass_fds: Sequence[int] = (),
    watch: Callable[[], str | None] | None = None,
    user: tuple[int, int] | None = None,
    own_program: bool = False,
) -> Outcome:
    """Run ``argv`` and return what happened; never leaves a process of the tree behind.

    Args:
        argv: Program and arguments (already wrapped for cgroups and rlimits).
        env: The complete environment of the process.
        cwd: Host directory to start in.
        stdin: Bytes fed to standard input, or None for /dev/null.
        wall_s: Seconds before the tree is killed and ``stopped="wall_time"``.
        output_bytes: Bytes of stdout plus stderr kept before ``stopped="output"``.
        group: The command's cgroup, polled for pids and OOM events and killed.
        on_start: Called with the process right after it started (for tracking, and
            for the cgroup gate); if it raises, the tree is killed and reaped first.
        pass_fds: Descriptors the process inherits (all others are closed).
        watch: Polled while the command runs (it throttles itself); a limit name it
            returns stops the tree with that reason (e.g. ``"workspace_size"``).
        user: Host (uid, gid) to start the process as, with no supplementary groups
            (needs root); None keeps the harness's identity.
        own_program: ``argv[0]`` is the harness's own program (``bwrap``, the gate),
            never the caller's: a failed start is judged by ``start_failure``.

    Raises:
        SandboxError: The program could not be started at all (with ``own_program``,
            ``StartRefused`` for any reason but ``E2BIG``: the host's, witnessed).
    """
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
            user=None if user is None else user[0],
            group=None if user is None else user[1],
            extra_groups=None if user is None else [],
        )
    except OSError as exc:
        message = f"could not start {argv[0]!r} in {cwd!r}: {exc}"
        raise (start_failure(message, exc.errno) if own_program else SandboxError(message)) from exc
    return run_child(
        _PopenChild(proc, group), stdin=stdin, wall_s=wall_s, output_bytes=output_bytes,
        group=group, on_start=on_start, watch=watch,
    )  # fmt: skip


def run_child(
    child: Child,
    *,
    stdin: bytes | None,
    wall_s: float,
    output_bytes: int,
    group: CommandCgroup | None = None,
    on_start: Callable[[Child], None] | None = None,
    watch: Callable[[], str | None] | None = None,
) -> Outcome:
    """Drive a started ``child`` to its end (the loop of ``run_tree``, see there).

    The harness's resources for ``child`` are released when this returns.
    """
    try:
        if on_start is not None:
            try:
                on_start(child)
            except BaseException:
                child.kill()
                child.wait()
                raise
        # The clock starts once on_start let the command go: harness work done there
        # while it waited at its gate (the owner walk) is not charged to the command.
        start = time.monotonic()
        deadline = start + wall_s
        return _supervise(child, start, deadline, stdin, output_bytes, group, watch)
    finally:
        child.close()


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits, or None (old kernel)."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


def _wait_exit(pidfd: int | None, timeout: float) -> None:
    """Sleep up to ``timeout`` seconds, or less if the process behind ``pidfd`` exits."""
    if pidfd is None:
        time.sleep(timeout)
        return
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.poll(timeout * 1000)


def _supervise(
    proc: Child,
    start: float,
    deadline: float,
    stdin: bytes | None,
    output_bytes: int,
    group: CommandCgroup | None,
    watch: Callable[[], str | None] | None,
) -> Outcome:
    """Pump, watch and end the started tree (the loop of ``run_tree``)."""
    pump = _Pump(proc, stdin, output_bytes)
    pidfd = proc.exit_fd
    if pidfd is not None:
        pump.watch_exit(pidfd)
    kill = proc.kill

    stopped: str | None = None
    ended_at: float | None = None  # when the command exited or was killed
    # An exit descriptor wakes the loop at the exit, so there is nothing to poll for
    # before the first event read; without one, short sleeps catch the exit early.
    poll = 0.001 if pidfd is None else _EVENTS_EVERY_S
    events_at = start + _EVENTS_EVERY_S
    try:
        while pump.open:
            now = time.monotonic()
            if ended_at is None:
                if not proc.exited():
                    events = now >= events_at
                    if events:
                        events_at = now + _EVENTS_EVERY_S
                    stopped = (
                        "output" if pump.overflow else _limit_event(now, deadline, group, events)
                    )
                    if stopped is None and watch is not None:
                        stopped = watch()
                    if stopped is None:
                        pump.step(max(0.0, min(poll, deadline - now)))
                        poll = min(poll * 2, _POLL_MAX_S)
                        continue
                # Done or stopped: whatever is left (background jobs too) goes now,
                # which also closes the pipes that leftovers held open.
                kill(alive=stopped is not None)
                pump.stop_feeding()
                ended_at = now
            elif now - ended_at > _DRAIN_S:
                break
            pump.step(_POLL_MAX_S)
        if ended_at is None:  # pipes closed first; the command may still run
            while not proc.exited() and stopped is None:
                now = time.monotonic()
                stopped = _limit_event(now, deadline, group)
                _wait_exit(pidfd, max(0.0, min(poll, deadline - now)))
                poll = min(poll * 2, _POLL_MAX_S)
            kill(alive=stopped is not None)
        returncode = proc.wait()
    except BaseException:
        kill()
        proc.wait()
        raise
    finally:
        pump.close()
    code = None if stopped else (128 - returncode if returncode < 0 else returncode)
    out, err = pump.out["stdout"], pump.out["stderr"]
    duration = time.monotonic() - start
    return Outcome(code, bytes(out), bytes(err), duration, stopped, truncated=pump.overflow)
