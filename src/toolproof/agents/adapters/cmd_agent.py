"""``cmd:COMMAND``: any command-line agent, given the task's tools over MCP.

For each episode the command runs on the host, through ``/bin/sh -c``, in its
own process group, while the task's tools are served over MCP streamable HTTP
on 127.0.0.1 (every call validated by the gateway and recorded). What it gets:

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
stdin                           the task when ``--agent-arg prompt_stdin=true``, else empty
=============================== ==================================================

The episode ends when the command exits; its standard output is the final
answer. A non-zero exit status is an agent error (with the end of its stderr).
At the time limit (``--agent-arg timeout=S``, else the episode's) the whole
process group is stopped (SIGTERM, then SIGKILL). Commands run on the host, not
in a sandbox: the sandboxes cut the network, so the MCP endpoint would be
unreachable from inside one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Usage

from ..base import AgentFactory, AgentSpec, EpisodeContext, ToolSession, agent
from ._options import parse_options
from ._tools_bridge import require_extra
from ._via_gateway import HARNESS_OPTIONS, GatewayPlan, episode_link, gateway_plan

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


def _read_usage(path: Path) -> Usage | None:
    """The usage the command wrote; None when there is none or it is not a small regular file.

    The command controls the file: a FIFO, a link or a huge file must not block or flood
    the harness's event loop (this runs on it), so it is opened without blocking or
    following links, and read only when it is a regular file, up to :data:`USAGE_BYTES`.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, USAGE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
        return Usage(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=data.get("cost_usd"),
        )
    except (ValueError, TypeError, AttributeError):
        return None


class CmdAgent:
    """Runs one command per episode against the task's tools served over MCP.

    Args:
        command: The command line (``/bin/sh -c``).
        options: Checked ``cmd:`` options.
    """

    def __init__(
        self, command: str, options: CmdOptions, plan: GatewayPlan | None = None, epoch: int = 0
    ) -> None:
        self.command = command
        self.options = options
        self.plan = plan or gateway_plan({}, f"cmd:{command}")
        self.epoch = epoch

    async def run(self, session: ToolSession) -> str:
        """Serve the tools, run the command to its end, return its stdout."""
        from toolproof.mcp import HttpEndpoint, ServeState, build_server

        state = ServeState()
        server = build_server(session, state)
        with tempfile.TemporaryDirectory(prefix="toolproof-cmd-") as tmp:
            files = Path(tmp)
            (files / "prompt.txt").write_text(session.prompt, encoding="utf-8")
            (files / "system_prompt.txt").write_text(session.system_prompt, encoding="utf-8")
            usage_file = files / "usage.json"
            async with (
                HttpEndpoint(server) as endpoint,
                episode_link(self.plan, self.epoch, session) as link,
            ):
                env = {
                    **os.environ,
                    **link.env(self.plan.model),  # its SDKs reach the model gateway
                    "TOOLPROOF_MCP_URL": endpoint.url,
                    "TOOLPROOF_PROMPT": session.prompt,
                    "TOOLPROOF_PROMPT_FILE": str(files / "prompt.txt"),
                    "TOOLPROOF_SYSTEM_PROMPT_FILE": str(files / "system_prompt.txt"),
                    "TOOLPROOF_USAGE_FILE": str(usage_file),
                }
                stdout, stderr, status = await self._execute(env, session.prompt)
            usage = _read_usage(usage_file)
        if usage is not None:
            session.record_usage(usage)
        if state.crash is not None:
            raise state.crash
        if status != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
            raise CommandFailed(f"the command exited with status {status}: {tail or '(no stderr)'}")
        return stdout.decode("utf-8", "replace").strip()

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
    if options.cwd is not None and not Path(options.cwd).is_dir():
        raise SpecError(
            [Problem(None, None, "--agent-arg cwd", f"{options.cwd!r} is not a directory")]
        )
    command = spec.target

    def factory(ctx: EpisodeContext) -> Any:
        return CmdAgent(command, options, plan, ctx.epoch)

    return factory
