"""``cmd:COMMAND``: any command-line agent, given the task's tools over MCP.

For each episode the task's tools are served over MCP streamable HTTP on the
host's 127.0.0.1 (every call validated by the gateway and recorded), and the
command runs through ``/bin/sh -c``. What it gets:

=============================== ==================================================
``TOOLPROOF_MCP_URL``           the MCP endpoint, ``http://127.0.0.1:PORT/mcp``
``TOOLPROOF_PROMPT``            the task
``TOOLPROOF_PROMPT_FILE``       a file holding the task
``TOOLPROOF_SYSTEM_PROMPT_FILE`` a file holding the suite's system prompt
``TOOLPROOF_USAGE_FILE``        where it may write ``{"input_tokens": N, "output_tokens": M}``
``OPENAI_BASE_URL``             the episode's model gateway path (OpenAI SDKs), and
``ANTHROPIC_BASE_URL``          (Anthropic SDKs): each call is recorded and priced
``OPENAI_API_KEY``, ...         a placeholder: the gateway sends the run's real key
``TOOLPROOF_MODEL``             the run's model (``--model``), when it names one
more endpoints                  each bridged variable; loopback URLs (the gateway's) are bridged
stdin                           the task when ``--agent-arg prompt_stdin=true``, else empty
=============================== ==================================================

Where it runs (``--sandbox``, or ``--agent-arg sandbox=``):

* ``bwrap`` (the default): in a fresh bubblewrap sandbox (``_cmd_sandbox``) with
  no network at all but the bridged endpoints, which appear on the sandbox's own
  loopback at the same URLs; the host's system directories and the ``bind``
  paths read-only; an empty ``/workspace`` of its own. The task's state is
  reached only through the tools. Its program must be inside: under ``/usr``, or
  bound with ``--agent-arg bind=/path/to/agent`` (``HOST`` or ``HOST:INSIDE``,
  comma-separated).
* ``process``: on the host, as this user, with this user's files and network
  (NOT isolated, and said so loudly): the escape hatch for agents that cannot
  run sandboxed.

The episode ends when the command exits; its standard output is the final
answer. A non-zero exit status, or a limit it ran into, is an agent error (with
the end of its stderr). At the time limit (``--agent-arg timeout=S``, else the
episode's) the whole process tree is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Usage, ingress

from .._outage import observed_outage
from ..base import AgentFactory, AgentSpec, EpisodeContext, ToolSession, agent
from ..limits import AgentFault, checked_usage
from ._cmd_sandbox import bridged
from ._options import parse_options
from ._tools_bridge import require_extra
from ._via_gateway import HARNESS_OPTIONS, GatewayPlan, episode_link, gateway_plan

_log = logging.getLogger(__name__)

STDERR_TAIL = 2000
"""Characters of a failed command's stderr kept in the error."""

POLL_S = 0.05
"""How often to look whether the command has exited."""


class CmdOptions(BaseModel):
    """Options of ``cmd:`` agents (``--agent-arg key=value``)."""

    model_config = ConfigDict(extra="forbid")

    timeout: float | None = Field(
        None, gt=0, description="Seconds the command may run (default: the episode's limit)."
    )
    cwd: str | None = Field(None, description="Directory to run in (default: the current one).")
    prompt_stdin: bool = Field(False, description="Also write the task to the command's stdin.")
    kill_grace_s: float = Field(
        2.0, ge=0, description="Seconds between SIGTERM and SIGKILL when stopping the command."
    )
    sandbox: str = Field(
        "bwrap",
        description="Where the command runs: bwrap (isolated) or process (the host, NOT "
        "isolated); the run's --sandbox sets it.",
    )
    bind: list[str] = Field(
        default_factory=list,
        description="Host paths the sandboxed command may read: HOST or HOST:INSIDE, "
        "comma-separated (its program, an interpreter, a virtualenv).",
    )
    memory_mb: int = Field(4096, gt=0, description="Memory of the sandboxed command, MiB.")
    pids: int = Field(512, gt=0, description="Processes and threads of the sandboxed command.")

    @field_validator("bind", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part for part in (p.strip() for p in value.split(",")) if part]
        return value


class CommandFailed(Exception):
    """The command exited with a non-zero status (an agent error)."""


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The exit status, as soon as the command exits.

    ``Process.wait()`` also waits for the command's pipes to close, which a
    child it left running in the background can hold open until its own end.
    """
    while proc.returncode is None:
        await asyncio.sleep(POLL_S)
    return proc.returncode


async def _stop(proc: asyncio.subprocess.Process, grace_s: float) -> None:
    """Stop the command's whole process group: SIGTERM, a grace period, SIGKILL."""
    _kill_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_exited(proc), grace_s)
    _kill_group(proc.pid, signal.SIGKILL)
    await _exited(proc)


async def _drain(stream: asyncio.StreamReader | None, into: bytearray) -> None:
    """Collect a pipe's bytes as they come (kept even if reading is cut short)."""
    while stream is not None and (chunk := await stream.read(1 << 16)):
        into += chunk


USAGE_BYTES = 64 * 1024
"""The most of the usage file read (it holds two or three numbers)."""


def _read_usage(path: Path) -> Usage | AgentFault | None:
    """The usage the command wrote (None: it wrote none), or why it is refused.

    The command controls the file: a FIFO, a link or a huge file must not block or flood
    the harness's event loop (this runs on it), so it is opened without blocking or
    following links, and read only when it is a regular file, up to :data:`USAGE_BYTES`.
    What it holds is agent bytes and passes the ingress (``agents.limits.checked_usage``):
    anything but a small JSON object of whole, non-negative token counts and a finite,
    non-negative ``cost_usd`` is returned as the :class:`AgentFault` to raise once the
    command's own outcome is known, and never reaches the record.
    """
    field = "the usage file (TOOLPROOF_USAGE_FILE)"
    fix = 'write a regular file holding {"input_tokens": N, "output_tokens": M}'
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a link (ELOOP), a folder, ...
        return AgentFault(f"{field} cannot be read ({exc.strerror}); {fix}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return AgentFault(f"{field} is not a regular file; {fix}")
        raw = os.read(fd, USAGE_BYTES + 1)
    except OSError as exc:
        return AgentFault(f"{field} cannot be read ({exc.strerror}); {fix}")
    finally:
        os.close(fd)
    try:
        data = ingress.parse_json(raw, field, USAGE_BYTES)
        if not isinstance(data, dict):
            raise ingress.IngressError(field, f"must hold a JSON object, got {type(data).__name__}")
        return checked_usage(data, field)
    except ingress.IngressError as exc:
        return AgentFault(f"{exc}; {fix}")
    except AgentFault as exc:
        return exc


class CmdAgent:
    """Runs one command per episode against the task's tools served over MCP.

    Args:
        command: The command line (``/bin/sh -c``).
        options: Checked ``cmd:`` options.
        endpoints: More ``(VARIABLE, URL)`` loopback endpoints the command may reach (a
            model gateway's base URLs); in a sandbox each is bridged in, on the host the
            variable simply holds the URL.
        env: More variables for the command (e.g. a placeholder API key). A value that is
            an ``http://`` URL on loopback with a port is bridged like an endpoint.
        timeout_s: The command's time limit when ``options.timeout`` is unset.
    """

    def __init__(
        self,
        command: str,
        options: CmdOptions,
        plan: GatewayPlan | None = None,
        epoch: int = 0,
        *,
        endpoints: Sequence[tuple[str, str]] = (),
        timeout_s: float = 600.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.options = options
        self.plan = plan or gateway_plan({}, f"cmd:{command}")
        self.epoch = epoch
        self.endpoints = list(endpoints)
        self.env = dict(env or {})
        self.timeout_s = options.timeout or timeout_s

    async def run(self, session: ToolSession) -> str:
        """Serve the tools, run the command to its end, return its stdout."""
        from toolproof.mcp import HttpEndpoint, ServeState, build_server

        state = ServeState()
        server = build_server(session, state)
        async with (
            HttpEndpoint(server) as endpoint,
            episode_link(self.plan, self.epoch, session) as link,
        ):
            # Everything the command is handed beyond the task; endpoints among it (the MCP
            # endpoint, the episode's model gateway paths) are bridged into the sandbox.
            extra = {
                **link.env(self.plan.model),
                **self.env,  # what the caller hands over explicitly wins
                **dict(self.endpoints),
                "TOOLPROOF_MCP_URL": endpoint.url,
            }
            if self.options.sandbox == "process":
                stdout, stderr, status, usage = await self._on_host(session, extra)
            else:
                routes, plain = bridged(extra)
                stdout, stderr, status, usage = await self._sandboxed(session, routes, plain)
        if isinstance(usage, Usage):
            session.record_usage(usage)
        if state.crash is not None:
            raise state.crash
        if status != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            raise CommandFailed(f"the command exited with status {status}: {tail or '(no stderr)'}")
        if isinstance(usage, AgentFault):  # after its exit status: that names the failure first
            raise usage
        return stdout.decode("utf-8", "replace").strip()

    async def _on_host(
        self, session: ToolSession, extra: Mapping[str, str]
    ) -> tuple[bytes, bytes, int, Usage | AgentFault | None]:
        """``--sandbox process``: the command on the host, as this user (NOT isolated)."""
        with tempfile.TemporaryDirectory(prefix="toolproof-cmd-") as tmp:
            files = Path(tmp)
            (files / "prompt.txt").write_text(session.prompt, encoding="utf-8")
            (files / "system_prompt.txt").write_text(session.system_prompt, encoding="utf-8")
            usage_file = files / "usage.json"
            env = {
                **os.environ,
                **extra,
                "TOOLPROOF_PROMPT": session.prompt,
                "TOOLPROOF_PROMPT_FILE": str(files / "prompt.txt"),
                "TOOLPROOF_SYSTEM_PROMPT_FILE": str(files / "system_prompt.txt"),
                "TOOLPROOF_USAGE_FILE": str(usage_file),
            }
            stdout, stderr, status = await self._execute(env, session.prompt)
            return stdout, stderr, status, _read_usage(usage_file)

    async def _sandboxed(
        self, session: ToolSession, routes: list[tuple[str, str]], plain: Mapping[str, str]
    ) -> tuple[bytes, bytes, int, Usage | AgentFault | None]:
        """The command in a fresh bwrap sandbox, bridged to ``routes`` only."""
        from toolproof.mcp._bridge import Bridge
        from toolproof.sandbox import ResourceLimits, SandboxError

        from ._cmd_sandbox import SandboxedCommand, parse_binds

        options = self.options
        limits = ResourceLimits(
            wall_s=self.timeout_s, cpu_s=None, memory_mb=options.memory_mb, pids=options.pids,
            file_size_mb=1024, workspace_mb=1024, output_bytes=10_000_000,
        )  # fmt: skip
        binds = parse_binds(options.bind, options.cwd)
        try:
            box = await asyncio.to_thread(
                SandboxedCommand, self.command, binds, limits, options.sandbox
            )
        except SandboxError as exc:  # the host's sandbox failed: not the agent's doing
            raise observed_outage(f"could not set up the command's sandbox: {exc}") from exc
        try:
            env = {
                **plain,
                "TOOLPROOF_PROMPT": session.prompt,
                "TOOLPROOF_PROMPT_FILE": box.write("prompt.txt", session.prompt),
                "TOOLPROOF_SYSTEM_PROMPT_FILE": box.write(
                    "system_prompt.txt", session.system_prompt
                ),
            }
            async with Bridge(box.bridge_dir, routes) as bridge:
                stdin = session.prompt if options.prompt_stdin else None
                try:
                    result = await box.run(bridge.spec(), env, stdin, options.cwd or "/workspace")
                except SandboxError as exc:
                    raise observed_outage(f"the command's sandbox failed: {exc}") from exc
            usage = _read_usage(box.usage_path())
        finally:
            await asyncio.to_thread(box.close)
        if result.limit_hit == "wall_time":
            raise TimeoutError(f"the command ran longer than {self.timeout_s:g}s")
        if result.limit_hit is not None:
            raise CommandFailed(
                f"the command hit its {result.limit_hit} limit in the sandbox "
                f"(memory_mb={options.memory_mb}, pids={options.pids}): "
                f"{result.stderr.strip()[-STDERR_TAIL:] or '(no stderr)'}"
            )
        status = result.exit_code if result.exit_code is not None else -1
        return result.stdout.encode(), result.stderr.encode(), status, usage

    async def _execute(self, env: dict[str, str], prompt: str) -> tuple[bytes, bytes, int]:
        """Run the command until it exits (not until its stray children close stdout)."""
        feed = prompt.encode() if self.options.prompt_stdin else None
        proc = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE if feed is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.options.cwd,
            env=env,
            start_new_session=True,
        )
        out, err = bytearray(), bytearray()
        io = asyncio.gather(_drain(proc.stdout, out), _drain(proc.stderr, err), _feed(proc, feed))
        grace = self.options.kill_grace_s
        try:
            status = await asyncio.wait_for(_exited(proc), self.options.timeout)
        except BaseException as exc:  # our timeout, the episode's (cancelled), or a failure
            await asyncio.shield(_stop(proc, grace))
            io.cancel()
            await asyncio.gather(io, return_exceptions=True)
            if isinstance(exc, TimeoutError):
                limit = self.options.timeout
                raise TimeoutError(f"the command ran longer than {limit}s") from None
            raise
        _kill_group(proc.pid, signal.SIGKILL)  # whatever it left running in the background
        # What is still in the pipes; a child that left the group could hold them open.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(io, max(grace, 1.0))
        return bytes(out), bytes(err), status


async def _feed(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    """Write the prompt to the command's stdin and close it (a command may not read it)."""
    if data is None or proc.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()


SANDBOXES = ("bwrap", "process")
"""Backends a command may run in (containers would need the forwarder in their image)."""


@agent("cmd")
def build(spec: AgentSpec) -> AgentFactory:
    """``cmd:COMMAND``; needs ``pip install 'toolproof[mcp]'``."""
    if not spec.target:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    'cmd agents need a command, e.g. cmd:"python my_agent.py"',
                )
            ]
        )
    require_extra("cmd", ("mcp",), "mcp")
    harness = {k: v for k, v in spec.options.items() if k in HARNESS_OPTIONS | {"model"}}
    own = {k: v for k, v in spec.options.items() if k not in harness}
    options = parse_options(CmdOptions, AgentSpec(spec.kind, spec.target, own))
    plan = gateway_plan(harness, spec.label)  # its model calls: through the gateway
    _check_placement(options)
    command = spec.target

    def factory(ctx: EpisodeContext) -> Any:
        return CmdAgent(command, options, plan, ctx.epoch, timeout_s=ctx.limits.total_timeout_s)

    return factory


def _check_placement(options: CmdOptions) -> None:
    """The backend, binds and cwd are usable (once per run, before any episode).

    Raises:
        SpecError: naming the option and the fix.
    """
    from toolproof.sandbox import get_backend, sandbox_owner

    def refuse(field: str, message: str) -> SpecError:
        return SpecError([Problem(None, None, field, message)])

    if options.cwd is not None and not Path(options.cwd).is_dir():
        raise refuse("--agent-arg cwd", f"{options.cwd!r} is not a directory")
    if options.sandbox not in SANDBOXES:
        raise refuse(
            "--sandbox",
            f"cmd agents run in bwrap (isolated) or process (NOT isolated), "
            f"not {options.sandbox!r}",
        )
    if options.sandbox == "process":
        _log.warning(
            "WARNING: cmd agents run with --sandbox process: each command runs on this host "
            "as this user, with its files, environment and network (NOT isolated)"
        )
        return
    reason = get_backend("bwrap").unavailable_reason()
    if reason is not None:
        raise refuse(
            "--sandbox",
            f"cmd agents run in bwrap, which cannot run here: {reason}; or pass "
            "--sandbox process --run-commands-on-host to run them on this host (NOT isolated)",
        )
    for value in options.bind:
        host, sep, inside = value.partition(":")
        if not Path(host).is_absolute() or not Path(host).exists():
            raise refuse(
                "--agent-arg bind", f"{value!r}: {host!r} must be an existing absolute host path"
            )
        if sep and not inside.startswith("/"):
            raise refuse("--agent-arg bind", f"{value!r}: the inside path must be absolute")
        mode = Path(host).stat().st_mode
        wanted = 0o005 if stat.S_ISDIR(mode) else 0o004
        if sandbox_owner() is not None and mode & wanted != wanted:
            raise refuse(
                "--agent-arg bind",
                f"{host!r} is not readable by others (mode {stat.S_IMODE(mode):o}); the "
                "harness runs as root, so the command runs as an unprivileged user: "
                f"chmod o+r{'x' if stat.S_ISDIR(mode) else ''} {host}",
            )
    if options.cwd is not None and not Path(options.cwd).is_absolute():
        raise refuse("--agent-arg cwd", f"{options.cwd!r} must be absolute in a sandbox")
    from ._cmd_sandbox import answer_key_binds  # a suite or a toolproof clone: answer keys

    for host, problem in answer_key_binds(options.bind, options.cwd):
        raise refuse("--agent-arg cwd" if host == options.cwd else "--agent-arg bind", problem)
