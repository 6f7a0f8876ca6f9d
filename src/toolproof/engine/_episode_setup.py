"""Set-up of one episode, below the loop in :mod:`.episode`, and the options it reads.

::

    open_episode   the task's tools, the episode's sandbox settings (and a pinned tool
                   environment), the tool context with its user (toolproof.users), the
                   policies, the tool gateway, the recorder and the initial snapshot

Tear-down is the world's own (``World.close``) and the scoring hand-off, which stays in
:mod:`.episode`. Nothing here calls back into the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolproof.spec import PolicySpec, SandboxSpec, TaskInstance, effective_sandbox
from toolproof.tools import CallPolicy, ToolContext, ToolGateway, resolve_tools
from toolproof.tools.policy import TaskPolicy
from toolproof.tools.pool import ToolPool
from toolproof.trajectory import Message, Step
from toolproof.users import EpisodeUser
from toolproof.worlds import BlobStore, World, WorldSnapshot

from .session import Recorder
from .side_models import SideModels, model_user

if TYPE_CHECKING:
    from toolproof.gateway import EpisodeLink


@dataclass
class Continuation:
    """Where a replayed episode picks up: the steps already taken and the original start."""

    history: list[Step]
    initial: WorldSnapshot
    parent: str
    prompt: list[Message] | None = None
    """The recorded prompt (a conversation's opening is not written again)."""


@dataclass
class EpisodeOptions:
    """How to run episodes (shared by every episode of a run)."""

    agent_label: str
    fixtures_base: Path | None = None
    blobs: BlobStore | None = None
    policies: Sequence[CallPolicy] = ()
    tmp_root: Path | None = None
    model_slots: asyncio.Semaphore | None = None
    """Bounds concurrent agent turns (model calls) across the run's episodes."""
    tool_slots: ToolPool | None = None
    """The threads blocking tool calls (sandboxed commands) of the run's episodes share."""
    sandbox: SandboxSpec | None = None
    """The suite's sandbox settings (with a task's: the stronger of each field)."""
    sandbox_backend: str | None = None
    """The run's sandbox backend for tasks and suites that name none (None: the host's)."""
    commands_on_host: bool = False
    """``--run-commands-on-host``: a task's or suite's ``backend: process`` is honoured."""
    policy: PolicySpec | None = None
    """The suite's policy (a task's own rules are added to it)."""
    env_cache: Path | None = None
    """Cache of pinned tool environments (None: ``~/.cache/toolproof/envs``)."""
    allow_drift: bool = False
    """Run tasks whose pinned tool environment differs from its version file."""
    side: SideModels | None = None
    """The run's user model (``simulator: model`` tasks) and judge model, through the gateway."""


@dataclass
class EpisodeParts:
    """What :func:`open_episode` made for the loop.

    Attributes:
        ctx: What the tools reach (world, instance, sandbox settings, user).
        user: The episode's simulated user (``ask_user`` and conversation alike).
        user_link: The gateway link of a model-played user (its ``infra_error`` is the
            witness of a provider failure: the harness's), else None.
        gateway: Every tool call goes through it.
        recorder: Writes the steps.
        initial: The world before the agent acted.
    """

    ctx: ToolContext
    user: EpisodeUser
    user_link: EpisodeLink | None
    gateway: ToolGateway
    recorder: Recorder
    initial: WorldSnapshot


async def open_episode(
    instance: TaskInstance, options: EpisodeOptions, world: World
) -> EpisodeParts:
    """Make what one episode's loop needs, up to the initial snapshot."""
    tools = resolve_tools(instance.task)
    sandbox = effective_sandbox(
        options.sandbox_backend,
        options.sandbox,
        instance.task.sandbox,
        commands_on_host=options.commands_on_host,
    )
    if sandbox.toolenv is not None:  # a task's pinned tools: checked, then mounted
        from toolproof.envs import prepare_episode  # only such a task loads it

        settings = sandbox
        sandbox = await asyncio.to_thread(  # the check runs the tools' programs
            lambda: prepare_episode(
                world.extras,
                settings,
                base=options.fixtures_base,
                suite=instance.suite,
                cache_root=options.env_cache,
                allow_drift=options.allow_drift,
            )
        )
    played = model_user(options.side, instance, world)
    user = EpisodeUser(instance, played[0] if played is not None else None)
    ctx = ToolContext(world=world, instance=instance, sandbox=sandbox, user=user)
    policy = TaskPolicy.build(options.policy, instance.task.policy, ctx=ctx)
    gateway = ToolGateway(
        tools,
        ctx,
        faults=instance.task.faults,
        policies=[*options.policies, *([policy] if policy is not None else [])],
        timeout_s=instance.limits.tool_timeout_s,
        pool=options.tool_slots,
    )
    recorder = Recorder(instance, world, gateway, options.blobs)
    initial = await recorder.start()
    link = played[1] if played is not None else None
    return EpisodeParts(ctx, user, link, gateway, recorder, initial)
