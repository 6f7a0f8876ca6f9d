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

from toolproof.sandbox import _container, _docker, _process  # noqa: F401  (registers)
from toolproof.sandbox._base import Sandbox
from toolproof.sandbox._errors import SandboxError, SpawnerLost
from toolproof.sandbox._identity import SANDBOX_GID, SANDBOX_UID, sandbox_owner
from toolproof.sandbox._limits import ResourceLimits
from toolproof.sandbox._registry import (
    available_backends,
    default_backend,
    get_backend,
    sandbox,
)
from toolproof.sandbox._result import ExecResult
from toolproof.sandbox._wsfs import reachable_tmp
from toolproof.sandbox.bwrap import _backend  # noqa: F401  (registers bwrap)

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
