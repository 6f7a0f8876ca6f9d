"""Running a ``cmd:`` agent's command inside a bwrap sandbox, bridged to its endpoints only.

Per episode::

    root/                       a private host directory (removed after the episode)
      bridge/  ─ro─▶ /run/toolproof   forward.py, prompt.txt, system_prompt.txt, bN.sock
      workspace/ ─rw─▶ /workspace      the command's own scratch space (not the task's)

A ``bind`` path (or the ``cwd``) that shows answer keys (a suite, a copy or clone of
toolproof, a git repository holding either, or a directory inside one) is refused before
any episode (:func:`answer_key_binds`): the sandbox would hand the agent every task file,
hidden test and reference solution (docs/isolation.md). Any git history left in a bind
(the agent's own ``.git``, a bare clone) is covered by an empty directory inside.

The command runs as ``python3 -I /run/toolproof/forward.py SPEC -- /bin/sh -c COMMAND`` in a
fresh bwrap sandbox (no network but its private loopback, a new environment, the host's
system directories and the ``bind`` paths read-only, nothing else of the host). The
forwarder serves each bridged endpoint on the sandbox's loopback and relays it over a Unix
socket to the harness's :class:`~toolproof.mcp._bridge.Bridge`, which relays to the real
endpoint; the variables (``TOOLPROOF_MCP_URL``, a gateway's ``OPENAI_BASE_URL`` ...) hold
the inside URLs. The task's own state is reached only through the tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from toolproof.sandbox import (
    ExecResult,
    ResourceLimits,
    Sandbox,
    SandboxError,
    get_backend,
    reachable_tmp,
    sandbox_owner,
)
from toolproof.spec._answer_keys import answer_key_problem, histories

INSIDE = "/run/toolproof"
"""The bridge directory inside the sandbox (see ``toolproof.mcp._bridge.INSIDE_DIR``)."""

USAGE_NAME = ".toolproof-usage.json"
"""The usage file, in the command's workspace."""

_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")
"""Interpreters visible inside the sandbox (under the bound system directories)."""

T = TypeVar("T")


def sandbox_python() -> tuple[str, dict[str, str]]:
    """A Python the forwarder can run inside, and the binds it needs.

    The system's ``python3`` when there is one (visible through ``/usr``), else this
    interpreter's installation, bound read-only at its own path.

    Raises:
        SandboxError: none of these is usable.
    """
    for candidate in _PYTHONS:
        if os.access(candidate, os.X_OK):
            return candidate, {}
    base = Path(sys.base_prefix).resolve()
    exe = base / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    if exe.exists() and not str(base).startswith(("/tmp/", "/workspace", "/proc", "/dev")):
        return str(exe), {str(base): str(base)}
    raise SandboxError(
        "cmd agents need a python3 inside the sandbox for the endpoint forwarder; "
        "install one (apt-get install python3) or run with --sandbox process (NOT isolated)"
    )


def parse_binds(values: Sequence[str], cwd: str | None) -> dict[str, str]:
    """``HOST`` or ``HOST:INSIDE`` entries (and ``cwd``) as host path to inside path.

    A bare ``HOST`` appears at the same path inside; ``cwd`` is bound at its own path too.
    """
    binds: dict[str, str] = {}
    for value in [*values, *([cwd] if cwd else [])]:
        host, sep, inside = value.partition(":")
        binds[host] = inside if sep else host
    return binds


def answer_key_binds(values: Sequence[str], cwd: str | None) -> list[tuple[str, str]]:
    """The ``bind`` entries (and ``cwd``) that would show answer keys: (host path, why).

    Every path the person running toolproof asks to bind is checked, wherever it is; the
    harness's own binds (the bridge directory, an interpreter) are not asked for here.
    """
    refused: list[tuple[str, str]] = []
    for host in parse_binds(values, cwd):
        problem = answer_key_problem(host)
        if problem is not None:
            refused.append((host, problem))
    return refused


def bridged(env: Mapping[str, str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Split a command's extra variables: loopback endpoints (bridged in) and the rest.

    A value that is an ``http://`` URL on loopback with a port (``TOOLPROOF_MCP_URL``, a
    model gateway's ``OPENAI_BASE_URL``) becomes a route of the bridge; anything else (a
    placeholder API key, a model name) is passed to the command as it is.
    """
    from toolproof.mcp._bridge import BridgeError, parse_route

    routes: list[tuple[str, str]] = []
    plain: dict[str, str] = {}
    for variable, value in env.items():
        try:
            parse_route(variable, value)
        except BridgeError:
            plain[variable] = value
        else:
            routes.append((variable, value))
    return routes, plain


def run_in_thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """``fn()`` on a thread of its own (not the loop's small default pool), as a future."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def work() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
            done: Callable[[], None] = lambda: future.set_exception(error)  # noqa: E731
        else:
            done = lambda: future.set_result(value)  # noqa: E731
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, done)

    threading.Thread(target=work, name="toolproof-cmd", daemon=True).start()
    return future


class SandboxedCommand:
    """One episode's command in a fresh sandbox, with its bridge directory and workspace.

    Args:
        command: The shell command line.
        binds: Extra read-only binds, host path to inside path.
        limits: The command's limits.
        backend: The sandbox backend (``bwrap``).
    """

    def __init__(
        self, command: str, binds: Mapping[str, str], limits: ResourceLimits, backend: str
    ) -> None:
        self.command = command
        self.limits = limits
        for host in binds:  # checked before any episode; again here, for direct callers
            problem = answer_key_problem(host)
            if problem is not None:
                raise SandboxError(f"--agent-arg bind: {problem}")
        self.python, python_binds = sandbox_python()
        where = reachable_tmp(sandbox_owner())  # a private TMPDIR: a shared /tmp
        self.root = Path(tempfile.mkdtemp(prefix="toolproof-cmd-", dir=where))
        try:
            self.root.chmod(0o711)  # the sandbox user (a root harness) passes through
            self.bridge_dir = self.root / "bridge"
            self.bridge_dir.mkdir(mode=0o755)
            self.workspace = self.root / "workspace"
            self.workspace.mkdir(mode=0o755)
            forwarder = Path(__file__).resolve().parents[2] / "mcp" / "_forward.py"
            shutil.copyfile(forwarder, self.bridge_dir / "forward.py")
            self.box: Sandbox = get_backend(backend)(
                self.workspace,
                limits,
                ro_binds={str(self.bridge_dir): INSIDE, **python_binds, **binds},
                hide=[found for host in binds for found in histories(host)],  # no git history
            )
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def write(self, name: str, text: str) -> str:
        """Put a file in the bridge directory; return its path inside."""
        path = self.bridge_dir / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
        return f"{INSIDE}/{name}"

    async def run(
        self, spec: Mapping[str, object], env: Mapping[str, str], stdin: str | None, cwd: str
    ) -> ExecResult:
        """Run the command to its end (or its limits); on cancellation kill it first."""
        argv = [self.python, "-I", f"{INSIDE}/forward.py", json.dumps(spec), "--"]
        argv += ["/bin/sh", "-c", self.command]
        env = {**env, "TOOLPROOF_USAGE_FILE": f"/workspace/{USAGE_NAME}"}
        future = run_in_thread(
            lambda: self.box.exec(argv, stdin=stdin, cwd=cwd, env=env, limits=self.limits)
        )
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self.box.close()  # kills the command; its thread then returns
            # Whatever it returns or raises then is nobody's: mark it seen, not "never retrieved".
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise

    def usage_path(self) -> Path:
        """Where the command's usage file is on the host (read it before :meth:`close`)."""
        return self.workspace / USAGE_NAME

    def close(self) -> None:
        """Kill anything left and delete the episode's directory."""
        try:
            self.box.close()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
