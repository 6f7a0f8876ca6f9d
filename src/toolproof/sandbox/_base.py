"""The ``Sandbox`` base class: what every backend shares.

A backend turns a command into an argv (``bwrap ...``, ``podman run ...``) and says
how limits are applied; the base class owns the rest: checking arguments (``_args``), the
cgroup (the sandbox's, through its spawner ``_spawner``, or one per command) and
rlimits, running the tree (``_spawn``), deciding which limit was hit (``_detect``),
the workspace size check, and clean-up on ``close``.
"""

from __future__ import annotations

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

from toolproof.sandbox._args import WORKSPACE, check_binds, check_env, inner_cwd
from toolproof.sandbox._errors import SandboxError
from toolproof.sandbox._handover import OwnerWalk
from toolproof.sandbox._identity import sandbox_owner
from toolproof.sandbox._launch import Launcher, Slot
from toolproof.sandbox._limits import ResourceLimits
from toolproof.sandbox._result import ExecResult
from toolproof.sandbox._sizewatch import SizeWatch
from toolproof.sandbox._spawn import Child
from toolproof.sandbox._wsfs import (
    ReachableBinds,
    WorkspaceFs,
    can_mount,
    check_reachable,
    on_workspace_tmpfs,
    reachable_tmp,
    unreachable_parent,
)

__all__ = ["WORKSPACE", "Sandbox"]

_log = logging.getLogger(__name__)
_DEFAULT_LIMITS = ResourceLimits()


class Sandbox(Launcher, ABC):
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

    def __init__(
        self,
        workspace: Path,
        limits: ResourceLimits = _DEFAULT_LIMITS,
        *,
        image: str | None = None,
        ro_binds: Mapping[str, str] | None = None,
        hide: Sequence[Path] = (),
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
            hide: Host directories inside ``ro_binds`` never shown (covered by an empty
                directory where a bind shows them): the git histories of a bound
                directory, say. bwrap honours it (the ``cmd:`` agents' backend).

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
        self._sizes = SizeWatch(self.workspace)  # the size check after each command
        weakref.finalize(self, self._sizes.close)  # its watches go with an unclosed sandbox
        self.limits = limits
        self.image = image
        self.ro_binds = check_binds(ro_binds)
        self.hide = tuple(Path(path).resolve() for path in hide)
        #: ``ro_binds`` sources re-bound where the sandbox user can reach them: the
        #: host path each one shows (so a backend can tell what is inside it).
        self.bind_origins: dict[str, str] = {}
        self._lock = threading.Lock()
        self._running: set[Child] = set()
        self._slot: Slot | None = None
        self._closed = False
        self._scratch: Path | None = None
        self._scratch_cleanup: Callable[[], object] | None = None
        self._fs: WorkspaceFs | None = None
        self._binds: ReachableBinds | None = None
        self._owner_walk = OwnerWalk()
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
            bound = str(self._binds.add(Path(host)))
            reachable[bound] = inside
            self.bind_origins[bound] = host
        self.ro_binds = reachable
        self._chown(owner)

    def _chown(self, owner: tuple[int, int]) -> None:
        try:
            self._owner_walk.hand_over(self.bind_source, *owner)
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
        self._sizes.close()

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
                where = reachable_tmp(self.owner)  # a private TMPDIR: a shared /tmp
                self._scratch = Path(tempfile.mkdtemp(prefix=f"toolproof-{self.name}-", dir=where))
                if self.drops_root:  # the sandbox user reads generated files from here
                    self._scratch.chmod(0o711)
                # Removed on close(), or when the sandbox is garbage-collected unclosed.
                self._scratch_cleanup = weakref.finalize(self, shutil.rmtree, self._scratch, True)
            return self._scratch
