"""The ``process`` backend: plain subprocesses on the host, NOT isolated.

Commands see the host filesystem, network and users; only resource limits and
process-tree clean-up apply. It exists so toolproof can run where bubblewrap does
not, when the person running it says so (``--run-commands-on-host``; invariant 9):
only then does ``default_backend`` fall back to it, loudly.

It cannot remap paths: commands start in the real workspace directory, ``cwd``
values under ``/workspace`` are rewritten to it and ``$WORKSPACE`` names it, but
an absolute ``/workspace/...`` inside a command line is NOT rewritten.
"""

from __future__ import annotations

import functools
import logging
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from toolproof.sandbox._base import WORKSPACE, Sandbox
from toolproof.sandbox._cgroup import host_support
from toolproof.sandbox._errors import SandboxError
from toolproof.sandbox._limits import ResourceLimits
from toolproof.sandbox._registry import sandbox
from toolproof.sandbox._result import ExecResult

__all__ = ["ProcessSandbox"]

_log = logging.getLogger(__name__)
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@functools.cache
def _reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"it needs Linux (/proc, waitid), this is {sys.platform}"
    if shutil.which("prlimit") is None:
        return "the 'prlimit' program is missing; install util-linux"
    return None


@functools.cache
def _warn_unlimited_pids() -> None:
    _log.warning(
        "no pids cgroup can be created here, so the process backend cannot limit the "
        "number of processes (RLIMIT_NPROC would count every process of this user); "
        "a fork bomb is stopped only by the wall-time limit"
    )


def _host_paths(env: dict[str, str], binds: dict[str, str]) -> dict[str, str]:
    """``env`` with each ``ro_binds`` inside path (as a ``:``-separated item) made its host path.

    Commands run on the host here, so a tool cache bound at /opt/x elsewhere is only
    reachable by its host path: ``PATH=/opt/x/bin:/usr/bin`` becomes ``<host>/bin:/usr/bin``.
    """
    if not binds:
        return env

    def host(item: str) -> str:
        for source, inside in binds.items():
            if item == inside or item.startswith(inside + "/"):
                return source + item[len(inside) :]
        return item

    return {key: ":".join(host(i) for i in value.split(":")) for key, value in env.items()}


@sandbox("process")
class ProcessSandbox(Sandbox):
    """Runs commands as plain host processes with rlimits and, if possible, cgroups.

    The environment is rebuilt from scratch (no host variables leak in):
    ``PATH``, ``LANG``, ``HOME`` and ``TMPDIR`` (private directories removed on
    ``close``), ``WORKSPACE`` (the real workspace path), then ``env``.
    """

    isolated = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why plain processes cannot be used here (not Linux, no prlimit), or None."""
        return _reason()

    def exec(
        self,
        command: str | Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = WORKSPACE,
        env: Mapping[str, str] | None = None,
        limits: ResourceLimits | None = None,
    ) -> ExecResult:
        """Run ``command`` on the host in the workspace (see ``Sandbox.exec``).

        Raises:
            SandboxError: The sandbox is closed, or ``cwd`` does not exist.
        """
        inner = self._inner_cwd(cwd)
        host_cwd = self._host_path(inner) or Path(inner)
        if not host_cwd.is_dir():
            raise SandboxError(f"cwd {cwd!r} is not a directory (host path {str(host_cwd)!r})")
        chosen = limits or self.limits
        if chosen.pids is not None and not host_support().has("pids"):
            _warn_unlimited_pids()
        scratch = self._scratch_dir()
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir(exist_ok=True)
        tmp.mkdir(exist_ok=True)
        full_env = {
            "PATH": _PATH,
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "WORKSPACE": str(self.workspace),
            **_host_paths(self._check_env(env), self.ro_binds),
        }
        return self._exec_limited(
            command,
            lambda argv: argv,
            env=full_env,
            host_cwd=host_cwd,
            stdin=stdin,
            limits=chosen,
            # RLIMIT_NPROC counts every process of the host user (and root is exempt),
            # so without a pids cgroup the process backend leaves pids unlimited.
            nproc_rlimit=False,
        )
