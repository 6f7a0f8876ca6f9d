"""What a caller may hand a sandbox: commands, a working directory, variables, read-only binds.

Each check refuses a bad value with a :class:`SandboxError` that quotes it; the backends
call them through the ``Sandbox`` base class.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path

from toolproof.sandbox._errors import SandboxError
from toolproof.spec.paths import host_bind_problem

__all__ = ["WORKSPACE", "check_binds", "check_env", "command_argv", "inner_cwd"]

#: Where the workspace appears inside every backend.
WORKSPACE = "/workspace"


def check_binds(binds: Mapping[str, str] | None) -> dict[str, str]:
    """``ro_binds`` with resolved host paths, or SandboxError naming the bad entry."""
    checked: dict[str, str] = {}
    for host, inside in (binds or {}).items():
        inner = posixpath.normpath(inside) if isinstance(inside, str) else ""
        if not inner.startswith("/") or inner == "/" or "\0" in inner:
            raise SandboxError(f"ro_binds: {inside!r} must be an absolute path inside, not /")
        hidden = (WORKSPACE, "/proc", "/dev")
        if inner == "/tmp" or inner in hidden or inner.startswith(tuple(h + "/" for h in hidden)):
            raise SandboxError(f"ro_binds: {inside!r} would hide /workspace, /tmp, /proc or /dev")
        # A path under /tmp is fine: it is bound on top of the sandbox's fresh /tmp.
        if not Path(host).is_absolute() or not Path(host).exists():
            raise SandboxError(f"ro_binds: host path {host!r} must be an existing absolute path")
        source = str(Path(host).resolve())  # judged, then mounted: the same resolved path
        # Every bind, the harness's own too, is judged again as it is mounted, on the path
        # it resolves to now (a link changed since the task loaded cannot show the system).
        problem = host_bind_problem(os.path.normpath(host), system_only=True)
        problem = problem or host_bind_problem(source, system_only=True)
        if problem is not None:
            raise SandboxError(f"ro_binds: {problem}")
        checked[source] = inner
    return checked


def _unpassable(text: str) -> str | None:
    """Why ``text`` cannot reach a program (a NUL byte, a lone surrogate), or None.

    A lone ``\\udc80``-``\\udcff`` is the byte it stands for (``os.fsdecode``'s
    surrogateescape); any other cannot be encoded. Refused here, the caller's error:
    the spawner would take either for a broken request and be discarded.
    """
    if "\0" in text:
        return "a NUL byte"
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return "a lone surrogate"
    return None


def command_argv(command: str | Sequence[str]) -> list[str]:
    """A shell command line as ``/bin/sh -c`` argv, or an argv list checked to be strings.

    A NUL byte or a lone surrogate is refused (``_unpassable``): no program can be given
    one.
    """
    if isinstance(command, str):
        if not command.strip():
            raise SandboxError("command is empty; pass a shell command line or an argv list")
        argv = ["/bin/sh", "-c", command]
    else:
        argv = list(command)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise SandboxError(f"command must be a non-empty list of strings, got {command!r}")
    for word in argv:
        why = _unpassable(word)
        if why is not None:
            raise SandboxError(f"command {command!r} contains {why}, which no program can be given")
    return argv


def inner_cwd(cwd: str) -> str:
    """``cwd`` as an absolute, normalised path inside the sandbox."""
    why = _unpassable(cwd)
    if why is not None:
        raise SandboxError(f"cwd {cwd!r} contains {why}")
    return posixpath.normpath(posixpath.join(WORKSPACE, cwd))


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The variables added to a sandbox's environment, each checked to be a name and a string.

    A name is non-empty text without ``=``; neither a name nor a value may hold a NUL
    byte or a lone surrogate (``_unpassable``).
    """
    checked = dict(env or {})
    for key, value in checked.items():
        if not isinstance(key, str) or not key or "=" in key or _unpassable(key):
            raise SandboxError(f"env variable {key!r} is not a valid name/value pair")
        if not isinstance(value, str):
            raise SandboxError(f"env[{key!r}] must be a string, got {type(value).__name__}")
        why = _unpassable(value)
        if why is not None:
            raise SandboxError(f"env[{key!r}] contains {why}, which no program can be given")
    return checked
