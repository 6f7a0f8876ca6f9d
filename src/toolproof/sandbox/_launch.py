"""How a sandbox launches one command: cgroup, rlimits, lease or gate, and the result.

``Launcher`` is the part of ``Sandbox`` (``_base``) that runs a command once a backend
has built its argv: it takes a ``Lease`` on the backend's command-starting helper where
the backend offers one (``_lease``: bwrap's spawner, ``bwrap._spawner_slot``) or a
cgroup of the command's own, sets the rlimits, starts the tree (``_spawn``), tracks it
so ``close`` can kill it, classifies the limit hit (``_detect``) and checks the
workspace size. It holds no state of its own: the attributes it reads are set by
``Sandbox``. It knows no backend.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Protocol

from toolproof.sandbox._args import command_argv
from toolproof.sandbox._cgroup import (
    JOIN_FAILED,
    RLIMIT_FAILED,
    CgroupGate,
    CgroupSupport,
    CommandCgroup,
    host_support,
    join_argv,
)
from toolproof.sandbox._detect import WorkspaceWatch, classify
from toolproof.sandbox._errors import SandboxError, SpawnerBroken, SpawnerLost, StartRefused
from toolproof.sandbox._limits import ResourceLimits, nproc_argv, nproc_raise, sh_sets_rlimits
from toolproof.sandbox._result import ExecResult
from toolproof.sandbox._sizewatch import SizeWatch
from toolproof.sandbox._spawn import Child, Outcome, run_child, run_tree
from toolproof.sandbox._wsfs import WorkspaceFs, is_full

__all__ = ["Launcher", "Lease", "Slot"]


class Lease(Protocol):
    """One command's use of a helper that starts commands inside a reused cgroup."""

    @property
    def group(self) -> CommandCgroup:
        """The cgroup the command is born in (its limits already set)."""

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
        """Start ``argv`` as ``user`` with these rlimits set before the uid drop.

        Raises:
            SpawnerBroken: Nothing was started (the command may take another path).
            SpawnerLost: The helper failed after the request went out.
            SandboxError: The program could not be started.
        """

    def release(self) -> None:
        """The command is done: kill what it left and hand the helper back."""

    def discard(self, why: str) -> None:
        """The helper failed during the lease: stop it (a new one comes later)."""


class Slot(Protocol):
    """What a sandbox keeps of a backend's helper: closed with the sandbox."""

    def close(self) -> None:
        """Stop the helper now, or when the running command ends."""


class Launcher:
    """Runs a built argv for ``Sandbox`` (its base class; see the module docstring)."""

    name: ClassVar[str]
    #: Every argv it starts begins with the harness's own program (``bwrap``, the gate),
    #: so a failed start is the host's (``_errors.start_failure``), not the caller's.
    own_program: ClassVar[bool] = False
    owner: tuple[int, int] | None = None
    _fs: WorkspaceFs | None = None
    workspace: Path
    _lock: threading.Lock
    _running: set[Child]
    _slot: Slot | None
    _sizes: SizeWatch
    _closed: bool

    _argv = staticmethod(command_argv)

    @property
    def bind_source(self) -> Path:
        """The host path backends bind at /workspace (the tmpfs mountpoint, if any)."""
        return self._fs.mountpoint if self._fs is not None else self.workspace

    def _check_open(self) -> None:
        with self._lock:
            if self._closed:
                raise SandboxError(f"this {self.name} sandbox is closed; create a new one")

    def _run(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        stdin: str | None,
        limits: ResourceLimits,
        group: CommandCgroup | None = None,
        pass_fds: Sequence[int] = (),
        watch: Callable[[], str | None] | None = None,
        user: tuple[int, int] | None = None,
        started: Callable[[Child], None] | None = None,
        child: Child | None = None,
    ) -> Outcome:
        """Run an argv (or drive a ``child`` already started) with tracking so ``close``
        can kill it.

        ``user`` starts it as that host user; ``started`` runs right after the start.
        """

        procs: list[Child] = []

        def track(proc: Child) -> None:
            with self._lock:
                self._running.add(proc)
                procs.append(proc)
                closed = self._closed
            if started is not None:
                started(proc)
            if closed:  # close() ran while this was starting
                proc.kill()

        if child is not None:
            try:
                return run_child(child, stdin=stdin.encode() if stdin is not None else None,
                                 wall_s=limits.wall_s, output_bytes=limits.output_bytes,
                                 group=group, on_start=track, watch=watch)  # fmt: skip
            finally:
                with self._lock:
                    self._running.difference_update(procs)
        with self._lock:
            if self._closed:
                raise SandboxError(f"this {self.name} sandbox is closed; create a new one")
        try:
            return run_tree(
                argv,
                env=env,
                cwd=cwd,
                stdin=stdin.encode() if stdin is not None else None,
                wall_s=limits.wall_s,
                output_bytes=limits.output_bytes,
                group=group,
                on_start=track,
                pass_fds=pass_fds,
                watch=watch,
                user=user,
                own_program=self.own_program,
            )
        finally:
            with self._lock:
                self._running.difference_update(procs)

    def _exec_limited(
        self,
        command: str | Sequence[str],
        wrap: Callable[[list[str]], list[str]],
        *,
        env: Mapping[str, str],
        host_cwd: Path,
        stdin: str | None,
        limits: ResourceLimits,
        nproc_rlimit: bool,
        pids_slack: int = 0,
        pass_fds: Sequence[int] = (),
        rlimits_outside: bool = False,
        hand_over: Callable[[], None] | None = None,
        raise_nproc: bool = False,
    ) -> ExecResult:
        """Run a command in a cgroup, with rlimits, and return what it did.

        When the harness is root, the command is forked by the sandbox's spawner
        (``_spawner``), born in the sandbox's cgroup; while another command of this
        sandbox holds the spawner, or where it cannot run, the command gets a cgroup
        of its own and moves into it before it execs (``_spawn``).

        Args:
            command: The command as given to ``exec``.
            wrap: Turns the rlimited argv into the full argv (e.g. prefixes bwrap).
            env: The complete environment of the outermost process.
            host_cwd: Host directory the outermost process starts in.
            stdin: Text for standard input.
            limits: The limits in force.
            nproc_rlimit: Use ``RLIMIT_NPROC`` for ``pids`` when no pids cgroup exists.
            pids_slack: Processes of the backend itself counted by the pids cgroup.
            pass_fds: Descriptors the outermost process inherits (e.g. bwrap's seccomp).
            rlimits_outside: Set the rlimits before ``wrap``'s programs (inherited by
                all of them, one exec fewer) unless ``RLIMIT_NPROC`` must be set inside.
            hand_over: Work that must be done before the command runs but may overlap
                its start (``_hand_over``): run while it waits at the cgroup gate, or
                before the start where there is no gate.
            raise_nproc: Raise the soft ``RLIMIT_NPROC`` of the sandbox user to its hard
                limit first (``nproc_raise``).
        """
        support = host_support()
        pids = None if limits.pids is None else limits.pids + pids_slack
        run = functools.partial(
            self._exec_in, command, wrap, env=env, host_cwd=host_cwd, stdin=stdin,
            limits=limits, nproc_rlimit=nproc_rlimit, pass_fds=pass_fds,
            rlimits_outside=rlimits_outside, hand_over=hand_over, raise_nproc=raise_nproc,
        )  # fmt: skip
        lease = self._lease(support, pids, limits.memory_mb)
        if lease is not None:
            try:
                return run(lease.group, lease)
            except SpawnerBroken as exc:  # nothing started: the per-command path
                lease.discard(str(exc))
            except StartRefused:  # the host's refusal; the helper works (handed back)
                raise
            except SpawnerLost as exc:
                lease.discard(str(exc))
                raise
        try:
            group = CommandCgroup(support, pids=pids, memory_mb=limits.memory_mb)
        except OSError as exc:
            raise SandboxError(f"could not create a cgroup for the command: {exc}") from exc
        return run(group, None)

    def _lease(
        self, support: CgroupSupport, pids: int | None, memory_mb: int | None
    ) -> Lease | None:
        """A lease on the backend's command-starting helper for one command, or None:
        the command gets a cgroup of its own. None here; bwrap overrides it."""
        return None

    def _exec_in(
        self,
        command: str | Sequence[str],
        wrap: Callable[[list[str]], list[str]],
        group: CommandCgroup,
        lease: Lease | None,
        *,
        env: Mapping[str, str],
        host_cwd: Path,
        stdin: str | None,
        limits: ResourceLimits,
        nproc_rlimit: bool,
        pass_fds: Sequence[int],
        rlimits_outside: bool,
        hand_over: Callable[[], None] | None,
        raise_nproc: bool,
    ) -> ExecResult:
        """``_exec_limited`` in ``group`` (through ``lease`` when given)."""
        broken = False
        try:
            by_rlimit_as = not group.has("memory")
            by_nproc = nproc_rlimit and not group.has("pids")
            held = self._fs is not None and self._fs.limited
            watch = None
            if not held and limits.workspace_mb is not None:  # no tmpfs: the fallback
                watch = WorkspaceWatch(self.workspace, limits.workspace_mb)
            rlimited = limits if held else limits.fsize_within_workspace()
            rlimits = rlimited.prlimit_args(nproc=by_nproc, address_space=by_rlimit_as)
            outside = rlimits_outside and not by_nproc
            if outside:
                argv = wrap(self._argv(command))
            else:
                argv = wrap(["prlimit", *rlimits, "--", *self._argv(command)])
            if lease is not None:
                assert self.owner is not None
                values = []
                if outside:
                    values = rlimited.rlimit_values(nproc=False, address_space=by_rlimit_as)
                raised = nproc_raise(self.owner) if raise_nproc else None
                if hand_over is not None:
                    hand_over()
                self._check_open()
                try:
                    child = lease.start(argv, env=env, cwd=str(host_cwd), user=self.owner,
                                        stdin=stdin is not None,
                                        rlimits=[*values, *([raised] if raised else [])],
                                        pass_fds=pass_fds)  # fmt: skip
                except SpawnerBroken:
                    broken = True
                    raise
                outcome = self._run(argv, env=env, cwd=str(host_cwd), stdin=stdin,
                                    limits=limits, group=group, watch=watch,
                                    child=child)  # fmt: skip
            else:
                if raise_nproc:
                    argv = [*nproc_argv(self.owner), *argv]
                outcome = self._spawn(
                    argv, group, env=env, cwd=str(host_cwd), stdin=stdin, limits=limits,
                    pass_fds=pass_fds, watch=watch,
                    rlimits=rlimited if outside else None, by_rlimit_as=by_rlimit_as,
                    hand_over=hand_over,
                )  # fmt: skip
            hit = classify(
                limits,
                returncode=outcome.returncode,
                stopped=outcome.stopped,
                stderr=outcome.stderr,
                truncated=outcome.truncated,
                pids_event=group.pids_hit(),
                oom_event=group.oom_killed(),
                memory_by_text=by_rlimit_as,
                pids_by_text=not group.has("pids"),
            )
        except SpawnerLost as exc:
            broken = not isinstance(exc, StartRefused)  # that one's helper still works
            raise
        finally:
            if lease is None:
                group.remove()
            elif not broken:
                lease.release()
        return self._result(outcome, hit, limits)

    def _spawn(
        self,
        argv: list[str],
        group: CommandCgroup,
        *,
        env: Mapping[str, str],
        cwd: str,
        stdin: str | None,
        limits: ResourceLimits,
        pass_fds: Sequence[int],
        watch: Callable[[], str | None] | None,
        rlimits: ResourceLimits | None = None,
        by_rlimit_as: bool = False,
        hand_over: Callable[[], None] | None = None,
    ) -> Outcome:
        """Start ``argv`` inside ``group``, as ``self.owner`` when that is set.

        The harness's own user joins the cgroup itself (``join_argv``). The sandbox
        user cannot write the root-owned cgroup files, so it starts held at a gate
        (``CgroupGate``): the harness moves it in and then lets it go. Starting it as
        that user directly (no ``setpriv`` exec) is the cheapest uid drop.

        ``rlimits`` (without ``RLIMIT_NPROC``), when given, are set on the first
        process: by the join or gate ``sh`` itself where ``/bin/sh`` is known to set
        them exactly (``sh_sets_rlimits``), else by a ``prlimit`` exec in front.
        """
        script = ""
        if rlimits is not None:
            if group.procs_files and sh_sets_rlimits():
                script = rlimits.ulimit_script(nproc=False, address_space=by_rlimit_as)
            else:
                args = rlimits.prlimit_args(nproc=False, address_space=by_rlimit_as)
                argv = ["prlimit", *args, "--", *argv]
        if not group.procs_files or self.owner is None:
            if hand_over is not None:
                hand_over()
            if group.procs_files:
                argv = join_argv(group.procs_files, argv, script)
            return self._run(argv, env=env, cwd=cwd, stdin=stdin, limits=limits, group=group,
                             pass_fds=pass_fds, watch=watch, user=self.owner)  # fmt: skip
        with CgroupGate(self.owner) as gate:

            def release(proc: Child) -> None:
                if hand_over is not None:
                    try:
                        hand_over()
                    except BaseException:
                        gate.abort()  # it exits 125 without running; run_tree reaps it
                        raise
                gate.release(group.procs_files, proc.pid)

            return self._run(
                gate.argv(argv, script), env=env, cwd=cwd, stdin=stdin, limits=limits,
                group=group, pass_fds=(*pass_fds, gate.fd), watch=watch, user=self.owner,
                started=release,
            )  # fmt: skip

    def _result(self, outcome: Outcome, hit: str | None, limits: ResourceLimits) -> ExecResult:
        """Build the ExecResult, adding the workspace size check."""
        if outcome.returncode == 125 and outcome.stderr.startswith((JOIN_FAILED, RLIMIT_FAILED)):
            raise SandboxError(outcome.stderr.decode("utf-8", errors="replace").strip())
        # file_size too: without a tmpfs, RLIMIT_FSIZE is capped at the workspace budget.
        if hit in (None, "file_size") and limits.workspace_mb is not None:
            over = self._sizes.bytes() > limits.workspace_mb * 1024 * 1024
            # A full tmpfs held the command at its size or inode limit (ENOSPC inside).
            if over or (self._fs is not None and self._fs.limited and is_full(self.bind_source)):
                hit = "workspace_size"
        return ExecResult(
            exit_code=outcome.returncode,
            stdout=outcome.stdout.decode("utf-8", errors="replace"),
            stderr=outcome.stderr.decode("utf-8", errors="replace"),
            duration_s=outcome.duration_s,
            limit_hit=hit,
        )
