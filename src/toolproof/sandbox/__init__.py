"""Running commands for workspace worlds, under limits and (by default) in isolation.

Map of the package, by concept::

    what every backend promises (backend-independent)
    _contract  the promises as data, and the checks the tests run against every backend

    shared mechanics
    Sandbox (_base)          set-up/clean-up: workspace owner, tmpfs, binds, scratch
    Launcher (_launch)       its base: one command's cgroup, rlimits, lease or gate, result
    _args      what a caller may pass (commands, cwd, env, binds)
    _spawn     run one process tree: deadline, output cap, kill everything after
    _cgroup    per-command pids/memory cgroups (v1 or v2) where the host allows
    _detect    which limit a command hit; workspace size
    _limits    ResourceLimits and their rlimit forms
    _identity  the unprivileged host user commands run as when the harness is root
    _wsfs      the workspace for that user: size-limited tmpfs, reachable binds (root)
    _handover  the owner walk before each command (changed directories only)
    _registry  @sandbox("name"), get_backend, available_backends, default_backend

    one module or package per backend
    ├── bwrap/     bubblewrap namespaces, default on Linux, isolated; its spawner,
    │              exec helper and seccomp filter (see toolproof.sandbox.bwrap)
    ├── _process   plain host processes, NOT isolated: --run-commands-on-host only
    └── podman / docker (_container, _docker, _engine)  one container per command

Typical use::

    with get_backend(default_backend())(workspace) as box:
        result = box.exec("pytest -q", limits=ResourceLimits(wall_s=60))

See docs/isolation.md for what each backend guarantees and what it does not.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

from toolproof.sandbox import _registry
from toolproof.sandbox._base import Sandbox
from toolproof.sandbox._errors import SandboxError, SpawnerLost
from toolproof.sandbox._identity import SANDBOX_GID, SANDBOX_UID, sandbox_owner
from toolproof.sandbox._limits import ResourceLimits
from toolproof.sandbox._result import ExecResult
from toolproof.sandbox._wsfs import reachable_tmp

BACKENDS = (
    "toolproof.sandbox._container",
    "toolproof.sandbox._docker",
    "toolproof.sandbox._process",
    "toolproof.sandbox.bwrap._backend",
)
"""The modules of the built-in backends (each registers its own with ``@sandbox``),
imported the first time a backend is looked up or registered: a run whose tasks run no
command never imports them."""

_S = TypeVar("_S", bound=type[Sandbox])


def _with_backends() -> None:
    for module in BACKENDS:
        importlib.import_module(module)


def get_backend(name: str) -> type[Sandbox]:
    """The backend class registered as ``name`` (see :func:`._registry.get_backend`).

    Raises:
        SandboxError: No backend has that name (the message lists the valid ones), or
            it is ``container`` and no container engine works here.
    """
    _with_backends()
    return _registry.get_backend(name)


def available_backends() -> list[str]:
    """Names of the registered backends that can run on this host, sorted."""
    _with_backends()
    return _registry.available_backends()


def default_backend(*, commands_on_host: bool = False) -> str:
    """``"bwrap"`` when bubblewrap works here; otherwise an error, never a silent fallback
    (see :func:`._registry.default_backend`).

    Raises:
        SandboxError: bwrap cannot run here and ``commands_on_host`` is False.
    """
    _with_backends()
    return _registry.default_backend(commands_on_host=commands_on_host)


def sandbox(name: str) -> Callable[[_S], _S]:
    """Register a backend class under ``name`` (see :func:`._registry.sandbox`); the
    built-in ones are registered first, so a name of theirs is taken.

    Raises:
        SandboxError: the name is taken or the class is no ``Sandbox``.
    """
    _with_backends()
    return _registry.sandbox(name)


__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "ExecResult",
    "ResourceLimits",
    "Sandbox",
    "SandboxError",
    "SpawnerLost",
    "available_backends",
    "default_backend",
    "get_backend",
    "reachable_tmp",
    "sandbox",
    "sandbox_owner",
]
