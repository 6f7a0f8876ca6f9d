"""The ``Sandbox`` base class: what every backend shares.

A backend turns a command into an argv (``bwrap ...``, ``podman run ...``) and says
how limits are applied; the base class owns the rest: checking arguments (``_args``), the
cgroup (the sandbox's, through its spawner ``_spawner``, or one per command) and
rlimits, running the tree (``_spawn``), deciding which limit was hit (``_detect``),
the workspace size check, and clean-up on ``close``.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from toolproof.sandbox._args import WORKSPACE, check_binds, check_env, command_argv, inner_cwd
from toolproof.sandbox._cgroup import (
    JOIN_FAILED,
    RLIMIT_FAILED,
    CgroupGate,
    CgroupSupport,
    CommandCgroup,
    host_support,
    join_argv,
)
from toolproof.sandbox._detect import WorkspaceWatch, classify, workspace_bytes
from toolproof.sandbox._errors import SandboxError
from toolproof.sandbox._identity import sandbox_owner
from toolproof.sandbox._limits import ResourceLimits, nproc_argv, nproc_raise, sh_sets_rlimits
from toolproof.sandbox._result import ExecResult
from toolproof.sandbox._spawn import Child, Outcome, run_child, run_tree
from toolproof.sandbox._spawner import SpawnerBroken, SpawnerLost, spawn_child
from toolproof.sandbox._spawner_slot import Lease, SpawnerSlot
from toolproof.sandbox._wsfs import (
    ReachableBinds,
    WorkspaceFs,
    can_mount,
    check_reachable,
    chown_tree,
    is_full,
    on_workspace_tmpfs,
    unreachable_parent,
)

__all__ = ["WORKSPACE", "Sandbox"]

_log = logging.getLogger(__name__)
_DEFAULT_LIMITS = ResourceLimits()


class Sandbox(ABC):
    """Runs commands against one workspace directory under resource limits.

    Use it as a context manager (or call ``close``) so nothing outlives it.
    ``exec`` may be called from several threads at once.

    Attributes:
        name: The registry name (set by ``@sandbox``).
        isolated: False when commands run on the host as the harness user.
        uses_image: True when the backend runs a container image.
        workspace: The resolved host path of the workspace.
        limits: Limits applied when ``exec`` is given none.
        image: The container image, for backends that use one.
        ro_binds: Extra read-only host paths, resolved host path to path inside.
        owner: The unprivileged host (uid, gid) commands run as and the workspace is
            given to when the harness is root (backends with ``drops_root``), else None.
    """

    name: ClassVar[str]
    isolated: ClassVar[bool]
    uses_image: ClassVar[bool] = False
    #: Commands run as ``sandbox_owner()`` when the harness is root (see ``_wsfs``).
    drops_root: ClassVar[bool] = False
    owner: tuple[int, int] | None = None
    _fs: WorkspaceFs | None = None

    def __init__(
        self,
        workspace: Path,
        limits: ResourceLimits = _DEFAULT_LIMITS,
        *,
        image: str | None = None,
        ro_binds: Mapping[str, str] | None = None,
    ) -> None:
        """Check the arguments and that the backend can run on this host.

        Args:
            workspace: The host directory commands see as /workspace.
            limits: Limits applied when ``exec`` is given none.
            image: The container image, for backends that use one.
            ro_binds: Extra host directories (or files) commands may read, host path to
                absolute path inside (e.g. a shared tool cache at ``/opt/toolproof-env``).
                bwrap and the containers mount them read-only there; the process backend
                cannot remap paths and rewrites the inside paths in ``env`` values instead.

        Raises:
            SandboxError: The workspace is not a directory, ``image`` does not fit
                the backend, a bind is unusable, or the backend cannot run here (the
                message says why).
        """
        path = Path(workspace)
        try:
            is_dir = path.is_dir()
        except OSError as exc:
            raise SandboxError(f"workspace {str(path)!r} cannot be accessed: {exc}") from exc
        if not is_dir:
            raise SandboxError(f"workspace {str(path)!r} is not a directory; create it first")
        if not isinstance(limits, ResourceLimits):
            raise SandboxError(f"limits must be a ResourceLimits, got {type(limits).__name__}")
        if image is not None and not self.uses_image:
            raise SandboxError(
                f"the {self.name!r} backend uses the host's own programs and takes no image; "
                f"drop image={image!r} or use a container backend (podman, docker)"
            )
        if self.uses_image and not image:
            raise SandboxError(f"the {self.name!r} backend needs image=, e.g. 'debian:12-slim'")
        reason = type(self).unavailable_reason()
        if reason is not None:
            raise SandboxError(f"the {self.name!r} sandbox backend cannot run here: {reason}")
        self.workspace = path.resolve()
        self.limits = limits
        self.image = image
        self.ro_binds = check_binds(ro_binds)
        self._lock = threading.Lock()
        self._running: set[Child] = set()
        self._slot: SpawnerSlot | None = None
        self._closed = False
        self._scratch: Path | None = None
        self._scratch_cleanup: Callable[[], object] | None = None
        self._fs: WorkspaceFs | None = None
        self._binds: ReachableBinds | None = None
        self.owner = sandbox_owner() if self.drops_root else None
        if self.owner is not None:
            try:
                self._own_workspace(self.owner)
            except BaseException:
                self.close()  # no mount or scratch directory outlives a failed set-up
                raise

    def _own_workspace(self, owner: tuple[int, int]) -> None:
        """Make the workspace the sandbox user's, on a size-limited tmpfs where possible."""
        check_reachable(self._scratch_dir(), "scratch directory", owner)
        if can_mount():
            # Nested on another sandbox's tmpfs: bind only, the outer size limit holds.
            nested = on_workspace_tmpfs(self.workspace)
            budget = None if nested else self.limits.workspace_mb
            fs = WorkspaceFs(self.workspace, self._scratch_dir(), budget, owner)
            self._fs = fs
            weakref.finalize(self, fs.close)  # runs before the scratch clean-up (LIFO)
        else:
            check_reachable(self.workspace, "workspace", owner)
        reachable: dict[str, str] = {}
        for host, inside in self.ro_binds.items():
            if unreachable_parent(Path(host), *owner) is None:
                reachable[host] = inside
                continue
            if not can_mount():
                check_reachable(Path(host), "ro_binds path", owner)
            if self._binds is None:
                self._binds = binds = ReachableBinds(self._scratch_dir())
                weakref.finalize(self, binds.close)
            reachable[str(self._binds.add(Path(host)))] = inside
        self.ro_binds = reachable
        self._chown(owner)

    @property
    def bind_source(self) -> Path:
        """The host path backends bind at /workspace (the tmpfs mountpoint, if any)."""
        return self._fs.mountpoint if self._fs is not None else self.workspace

    def _chown(self, owner: tuple[int, int]) -> None:
        try:
            chown_tree(self.bind_source, *owner)
        except OSError as exc:
            raise SandboxError(f"could not give the workspace to the sandbox user: {exc}") from exc

    def _prepare(self, limits: ResourceLimits) -> None:
        """Before a command: the tmpfs sized for ``limits``, the tree the sandbox user's.

        Between commands only the harness writes to the workspace, so this walk sees
        what it wrote (as root) and hands it over; it never follows a link.
        """
        if self.owner is None:
            return
        self._check_open()
        self._hand_over(limits)

    def _check_open(self) -> None:
        with self._lock:
            if self._closed:
                raise SandboxError(f"this {self.name} sandbox is closed; create a new one")

    def _hand_over(self, limits: ResourceLimits) -> None:
        """The part of ``_prepare`` after the open check: resize, then the owner walk.

        ``_exec_limited(hand_over=...)`` runs it while the command waits at its
        cgroup gate, so the walk overlaps the start of the command's first process.
        """
        if self.owner is None:
            return
        if self._fs is not None and limits.workspace_mb is not None:
            self._fs.resize(limits.workspace_mb)
        self._chown(self.owner)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why this backend cannot run on this host (with the fix), or None if it can."""
        return None

    @classmethod
    def available(cls) -> bool:
        """True when this backend can run commands on this host."""
        return cls.unavailable_reason() is None

    @abstractmethod
    def exec(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = WORKSPACE,
        env: Mapping[str, str] | None = None,
        limits: ResourceLimits | None = None,
    ) -> ExecResult:
        """Run one command to completion and return what it did.

        Args:
            command: A shell command line (run by ``/bin/sh -c``) or an argv list.
            stdin: Text fed to standard input; None gives it /dev/null.
            cwd: Directory to run in, as seen inside the sandbox (relative paths are
                taken from ``/workspace``).
            env: Variables added to the sandbox's small fixed environment.
            limits: Limits for this command instead of ``self.limits``.

        Raises:
            SandboxError: The sandbox is closed or an argument is unusable.
        """

    def close(self) -> None:
        """Kill any command still running and delete scratch files; safe to call twice."""
        with self._lock:
            self._closed = True
            running = list(self._running)
        for child in running:
            child.stop()
        if self._slot is not None:
            self._slot.close()
        if self._fs is not None:
            self._fs.close()
        if self._binds is not None:
            self._binds.close()
        if self._scratch_cleanup is not None:
            self._scratch_cleanup()
            self._scratch = self._scratch_cleanup = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- helpers for backends -------------------------------------------------

    _argv = staticmethod(command_argv)
    _inner_cwd = staticmethod(inner_cwd)
    _check_env = staticmethod(check_env)

    def _host_path(self, inner: str) -> Path | None:
        """The host path of an inside path under /workspace, or None if it is elsewhere."""
        if inner != WORKSPACE and not inner.startswith(WORKSPACE + "/"):
            return None
        return self.workspace / inner[len(WORKSPACE) :].lstrip("/")

    def _checked_cwd(self, cwd: str) -> str:
        """``cwd`` inside the sandbox, after checking it exists when it is under /workspace.

        Raises:
            SandboxError: ``cwd`` is under /workspace but is not a directory there.
        """
        inner = self._inner_cwd(cwd)
        host = self._host_path(inner)
        if host is not None and not host.is_dir():
            raise SandboxError(f"cwd {cwd!r} is not a directory in the workspace {self.workspace}")
        return inner

    def _scratch_dir(self) -> Path:
        """A private host directory removed on ``close`` (home, tmp, generated files)."""
        with self._lock:
            if self._scratch is None:
                self._scratch = Path(tempfile.mkdtemp(prefix=f"toolproof-{self.name}-"))
                if self.drops_root:  # the sandbox user reads generated files from here
                    self._scratch.chmod(0o711)
                # Removed on close(), or when the sandbox is garbage-collected unclosed.
                self._scratch_cleanup = weakref.finalize(self, shutil.rmtree, self._scratch, True)
            return self._scratch

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
                lease.slot.discard(lease, str(exc))
            except SpawnerLost as exc:
                lease.slot.discard(lease, str(exc))
                raise
        try:
            group = CommandCgroup(support, pids=pids, memory_mb=limits.memory_mb)
        except OSError as exc:
            raise SandboxError(f"could not create a cgroup for the command: {exc}") from exc
        return run(group, None)

    def _lease(
        self, support: CgroupSupport, pids: int | None, memory_mb: int | None
    ) -> Lease | None:
        """The sandbox's spawner for one command, or None (see ``SpawnerSlot.lease``)."""
        slot = self._spawner_slot(support)
        return None if slot is None else slot.lease(pids, memory_mb)

    def _spawner_slot(self, support: CgroupSupport) -> SpawnerSlot | None:
        """The sandbox's ``SpawnerSlot`` (made on first use), or None where none can run."""
        if self.owner is None or not support.parents:
            return None
        with self._lock:
            if self._slot is None:
                self._slot = SpawnerSlot(support)
                weakref.finalize(self, self._slot.close)  # no helper outlives the sandbox
            return self._slot

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
                    child = spawn_child(lease.spawner, argv, env=env, cwd=str(host_cwd),
                                        user=self.owner, stdin=stdin is not None,
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
        except SpawnerLost:
            broken = True
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
            over = workspace_bytes(self.workspace) > limits.workspace_mb * 1024 * 1024
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
