"""One episode: build the world, let the agent act through the gateway, score what it did.

Harness-driven::

    loop { agent.act(observation) -> turn; gateway.call(each call) -> results; record Step }
    until a final answer, or a limit (steps, time, loop), or an error.

Every episode ends with a termination reason. The rule (invariant 4, see
``docs/failure-modes.md``): whatever agent-controlled input causes (a turn of the
wrong shape or size, an exception of any kind raised by the agent's code, even
``SystemExit`` or a stray ``CancelledError``) is the agent's (``agent_error``);
only a failure of the harness or the infrastructure (a provider outage after
retries, a tool that crashed on valid input, a missing sandbox backend, a disk
error) is an ``infra_error``, which is retried and kept out of the scores.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolproof.agents import (
    Agent,
    AgentFactory,
    AgentInfraError,
    AgentTurn,
    DrivenAgent,
    Observation,
    agent_session,
)
from toolproof.agents._outage import UNOBSERVED, take_observed_outage
from toolproof.agents.base import drives
from toolproof.agents.limits import AgentFault, checked_turn
from toolproof.envs import prepare_episode
from toolproof.scoring import Score, ScoringContext, score_episode
from toolproof.scoring.checks.custom import needs_thread
from toolproof.spec import PolicySpec, SandboxSpec, SpecError, TaskInstance, effective_sandbox
from toolproof.tools import CallPolicy, ToolContext, ToolCrash, ToolGateway, resolve_tools
from toolproof.tools.answer import submitted, submitted_text
from toolproof.tools.policy import TaskPolicy, requested_stop
from toolproof.tools.pool import ToolPool
from toolproof.tools.toolkits.shell import SETTINGS_KEY
from toolproof.trajectory import Message, Step, Termination, Trajectory
from toolproof.worlds import BlobStore, World, WorldSnapshot

from ._agent_code import (
    AGENT_RAISES,
    agent_raised,
    cancelled_from_outside,
    close_agent,
    error_text,
)
from ._copies import AgentCopies
from .building import BuildTimeout, build_agent_for, stop_commands
from .faults import crash_outcome, harness_fault, unscored
from .session import DrivenSession, Recorder, off_loop
from .side_models import SideModels, attach_user, judging
from .turns import NEXT_USER_TURN, USER_TURN, FollowUp, UserTurns, current_user_turn, refuse_driven


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


async def run_episode(
    instance: TaskInstance,
    factory: AgentFactory,
    options: EpisodeOptions,
    *,
    world: World | None = None,
    continuation: Continuation | None = None,
) -> tuple[Trajectory, Score]:
    """Run one episode to its end and score it.

    Args:
        instance: The rendered task.
        factory: Makes this episode's agent.
        options: Run-wide settings.
        world: A prepared world (e.g. restored for a replay); built fresh when None.
        continuation: Continue an earlier episode after its first steps (time travel);
            ``world`` must hold the state those steps left.
    """
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    limits = instance.limits
    own_world = world is None
    world = world or World(
        instance.task.world, fixtures_base=options.fixtures_base, tmp_root=options.tmp_root
    )
    prompt = [
        Message(role="system", content=instance.system_prompt),
        Message(role="user", content=instance.task.description),
    ]
    termination = Termination.COMPLETED
    error: str | None = None
    answer: str | None = None
    recorder: Recorder | None = None
    initial: WorldSnapshot | None = None
    user_link = None
    acting = False  # the agent has been handed the episode: its input may set faults off
    try:
        tools = resolve_tools(instance.task)
        sandbox = effective_sandbox(
            options.sandbox_backend,
            options.sandbox,
            instance.task.sandbox,
            commands_on_host=options.commands_on_host,
        )
        if sandbox.toolenv is not None:  # a task's pinned tools: checked, then mounted
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
        ctx = ToolContext(world=world, instance=instance, scratch={SETTINGS_KEY: sandbox})
        user_link = attach_user(options.side, instance, ctx, world)
        policy = TaskPolicy.build(options.policy, instance.task.policy, ctx=ctx)
        gateway = ToolGateway(
            tools,
            ctx,
            faults=instance.task.faults,
            policies=[*options.policies, *([policy] if policy is not None else [])],
            timeout_s=limits.tool_timeout_s,
            pool=options.tool_slots,
        )
        recorder = Recorder(instance, world, gateway, options.blobs)
        initial = await recorder.start()
        turns = UserTurns(instance, ctx)
        if continuation is not None:
            initial = continuation.initial
            recorder.steps.extend(continuation.history)
            for step in continuation.history:
                for call in step.message.tool_calls:
                    gateway.note_past_call(call)
            prompt[:] = continuation.prompt or prompt
            turns.resume(prompt, continuation.history)
        else:
            prompt[:] = await turns.opening(prompt)  # a user in conversation opens
        gateway.offer_only(instance.task.hidden_tools(current_user_turn(recorder.steps)))
        try:  # the user's factory on a thread: one that blocks stalls only this episode
            agent = await build_agent_for(  # the key: built-ins only
                factory, instance, gateway.schemas, limits.step_timeout_s
            )
        except BuildTimeout as exc:
            termination, error = Termination.TIMEOUT, str(exc)
        else:
            acting = True
            try:
                if drives(agent):
                    refuse_driven(instance, options.agent_label)
                    termination, answer, error = await _drive(
                        agent, recorder, gateway, instance, prompt
                    )
                else:
                    termination, answer, error = await _loop(
                        agent, recorder, gateway, instance, prompt, t0, options.model_slots, turns
                    )
            finally:
                await close_agent(agent)
        stop = requested_stop(ctx)  # a tool or policy ended the episode (its last calls refused)
        if stop is not None and termination is not Termination.INFRA_ERROR:
            termination, answer, error = stop[0], None, stop[1]
            if stop[0] is Termination.COMPLETED and submitted(ctx) is not None:
                # submit_answer ended it: the typed value is the final answer
                answer, error = submitted_text(ctx), None
        if user_link is not None and user_link.infra_error is not None:  # the harness's model
            termination, answer, error = Termination.INFRA_ERROR, None, user_link.infra_error
    except ToolCrash as exc:  # infra only when witnessed; else the agent's arguments set it off
        if user_link is not None and user_link.infra_error is not None:  # the harness's model
            termination, error = Termination.INFRA_ERROR, user_link.infra_error
        else:
            termination, error = crash_outcome(exc)
    except SpecError:  # the run's configuration cannot run this task: the run stops
        if own_world:
            world.close()
        raise
    except Exception as exc:  # a harness failure outside the agent's turn
        if user_link is not None and user_link.infra_error is not None:  # the harness's model
            termination, error = Termination.INFRA_ERROR, user_link.infra_error
        elif acting:  # after the agent acted (a workspace it filled, ...): no witness
            termination, error = harness_fault("run", exc)
        else:  # building the world or the agent's tools: nothing of the agent's yet
            termination, error = Termination.INFRA_ERROR, error_text(exc)
    except asyncio.CancelledError:  # the run is stopping: nothing to score, clean up
        stop_commands(world)  # a sandboxed command on a tool thread is killed now
        if own_world:
            world.close()
        raise
    steps = recorder.steps if recorder is not None else []
    trajectory = Trajectory(
        episode_id=instance.key,
        task_id=instance.task.id,
        epoch=instance.epoch,
        seed=instance.seed,
        agent=options.agent_label,
        prompt=prompt,
        steps=steps,
        final_answer=answer,
        termination=termination,
        error=error,
        started_at=started_at,
        duration_s=time.perf_counter() - t0,
        parent=continuation.parent if continuation is not None else None,
    )
    try:  # one hop: deleting a big workspace takes a while too
        score = await off_loop(
            world,
            lambda: _score(
                instance, trajectory, initial, world, own_world, options.fixtures_base, options.side
            ),
            # user code, or a judge's synchronous model client: never on the event loop
            always=needs_thread(instance.task, options.fixtures_base),
        )
    except asyncio.CancelledError:
        stop_commands(world)  # e.g. a check's command
        if own_world:  # the scoring thread may be closing it at the same time
            with contextlib.suppress(Exception):
                world.close()
        raise
    except SpecError:  # the run's configuration cannot score this task: the run stops
        if own_world:
            world.close()
        raise
    except Exception as exc:  # toolproof's own scoring failed: this episode's fault, not the run's
        if own_world:
            with contextlib.suppress(Exception):
                world.close()
        return unscored(trajectory, exc)
    except BaseException:
        if own_world:
            world.close()
        raise
    return trajectory, score


def _score(
    instance: TaskInstance,
    trajectory: Trajectory,
    initial: WorldSnapshot | None,
    world: World,
    close: bool,
    task_dir: Path | None,
    side: SideModels | None = None,
) -> Score:
    """Snapshot the final state, score the episode, close the world if ``close``.

    Runs on a thread for a workspace world (the checks may walk or read it).
    """
    try:
        if initial is None:
            initial = world.snapshot()
        final = world.snapshot()
        with judging(side, instance):
            return score_episode(
                ScoringContext(
                    instance=instance,
                    trajectory=trajectory,
                    initial=initial,
                    final=final,
                    world=world,
                    task_dir=task_dir,
                )
            )
    finally:
        if close:
            world.close()


async def _loop(
    agent: Agent,
    recorder: Recorder,
    gateway: ToolGateway,
    instance: TaskInstance,
    prompt: list[Message],
    t0: float,
    model_slots: asyncio.Semaphore | None = None,
    turns: UserTurns | None = None,
) -> tuple[Termination, str | None, str | None]:
    limits = instance.limits
    messages = AgentCopies(prompt)
    tools = AgentCopies(gateway.schemas)
    for past in recorder.steps:
        messages.add(past.message)
        messages.extend(
            Message(role="tool", content=r.content, tool_call_id=r.call_id, name=r.name)
            for r in past.results
        )
        messages.extend(past.observations)
    turns = turns or UserTurns(instance, gateway.ctx)
    turn_index = current_user_turn(recorder.steps)
    for step in range(len(recorder.steps), limits.max_steps):
        remaining = limits.total_timeout_s - (time.perf_counter() - t0)
        if remaining <= 0:
            return Termination.TIMEOUT, None, f"episode exceeded {limits.total_timeout_s:g}s"
        # The agent's own copies (see AgentCopies), made without a deepcopy per turn.
        observation = Observation.model_construct(
            messages=messages.fresh(), tools=tools.fresh(), step=step
        )
        budget = min(limits.step_timeout_s, remaining)
        q0 = time.perf_counter()
        # Only a turn that found every slot taken queued; an uncontended one is recorded
        # without a queue time, so that the record does not depend on the machine's load.
        contended = model_slots is not None and model_slots.locked()
        try:
            async with model_slots or contextlib.nullcontext():
                a0 = time.perf_counter()  # the turn's clock starts once it has a model slot
                t0 += a0 - q0  # waiting for a slot is not the agent's time either
                async with asyncio.timeout(budget):  # no extra task per turn, unlike wait_for
                    turn = checked_turn(await agent.act(observation), "act()")
        except TimeoutError:
            return Termination.TIMEOUT, None, f"agent turn {step} took longer than {budget:g}s"
        except AgentInfraError as exc:
            if take_observed_outage(exc):  # toolproof's own adapter saw the provider fail
                return Termination.INFRA_ERROR, None, str(exc)
            error = agent_raised(exc, f"act() of step {step}")
            return Termination.AGENT_ERROR, None, f"{error} ({UNOBSERVED})"
        except AGENT_RAISES as exc:
            return Termination.AGENT_ERROR, None, agent_raised(exc, f"act() of step {step}")
        agent_s = time.perf_counter() - a0
        notes: dict[str, Any] | None = {"retries": turn.retries} if turn.retries else None
        if contended and a0 - q0 > 0.001:
            notes = {**(notes or {}), "model_queue_s": round(a0 - q0, 6)}
        follow: FollowUp | None = None
        if turns.active:
            notes = {**(notes or {}), USER_TURN: turn_index}
            if not turn.tool_calls and not turn.give_up:  # the reply goes to the user
                follow = await turns.after(turn.content, turn_index)
                t0 += follow.user_s  # the user's time is not the agent's
                notes.update(follow.notes)
        if follow is not None and not follow.ends and follow.message is not None:
            # the reply ends this user turn; the next user message follows it
            message = Message(role="assistant", content=turn.content)
            user = follow.message
            turn_index += 1
            await recorder.record(
                message,
                [],
                agent_s=agent_s,
                tool_s=0.0,
                usage=turn.usage,
                observations=[user],
                annotations={**(notes or {}), NEXT_USER_TURN: turn_index},
            )
            gateway.offer_only(instance.task.hidden_tools(turn_index))
            tools = AgentCopies(gateway.schemas)  # the turn may offer more tools
            messages.extend([message, user])
            continue
        if not turn.tool_calls:
            message = Message(role="assistant", content=turn.content)
            await recorder.record(
                message,
                [],
                agent_s=agent_s,
                tool_s=0.0,
                usage=turn.usage,
                observations=[follow.message] if follow and follow.message else [],
                annotations=notes,
            )
            final = Termination.GAVE_UP if turn.give_up else Termination.COMPLETED
            return final, turn.content or "", None
        calls, results, tool_s = await recorder.execute(turn.tool_calls, limits.loop_threshold)
        if recorder.last_queue_s > 0.001:  # waiting for a worker thread is not the agent's time
            t0 += recorder.last_queue_s
            notes = {**(notes or {}), "tool_queue_s": round(recorder.last_queue_s, 6)}
        message = Message(role="assistant", content=turn.content, tool_calls=calls)
        await recorder.record(
            message, results, agent_s=agent_s, tool_s=tool_s, usage=turn.usage, annotations=notes
        )
        messages.add(message)
        messages.extend(
            Message(role="tool", content=r.content, tool_call_id=r.call_id, name=r.name)
            for r in results
        )
        stop = requested_stop(gateway.ctx)  # a limit or policy of the episode was hit
        if stop is not None:
            return stop[0], None, stop[1]
        if recorder.loop_detected:
            return Termination.LOOP, None, recorder.loop_detected
    return Termination.STEP_LIMIT, None, f"no answer after {limits.max_steps} steps"


async def _drive(
    agent: DrivenAgent,
    recorder: Recorder,
    gateway: ToolGateway,
    instance: TaskInstance,
    prompt: list[Message],
) -> tuple[Termination, str | None, str | None]:
    limits = instance.limits
    session = DrivenSession(
        recorder=recorder,
        system_prompt=instance.system_prompt,
        prompt=instance.task.description,
        tools=gateway.schemas,
        max_steps=limits.max_steps,
        loop_threshold=limits.loop_threshold,
    )
    a0 = time.perf_counter()
    try:
        # In this task, not one wait_for would make: a SystemExit out of agent code is
        # caught here instead of escaping the event loop.
        async with asyncio.timeout(limits.total_timeout_s) as clock:
            session.on_wait = lambda s: clock.reschedule((clock.when() or 0.0) + s)
            answer = await agent.run(agent_session(session))
    except TimeoutError as exc:  # the episode's limit, or the agent's own (which says which)
        if gateway.crash is not None:
            raise ToolCrash(gateway.crash, witnessed=gateway.crash_witnessed) from None
        limit = f"episode exceeded {limits.total_timeout_s:g}s"
        return Termination.TIMEOUT, None, str(exc) or limit
    except AgentInfraError as exc:
        if gateway.crash is not None:
            raise ToolCrash(gateway.crash, witnessed=gateway.crash_witnessed) from None
        if take_observed_outage(exc):  # the model gateway or toolproof's adapter saw it
            return Termination.INFRA_ERROR, None, str(exc)
        return Termination.AGENT_ERROR, None, f"{agent_raised(exc, 'run()')} ({UNOBSERVED})"
    except AGENT_RAISES as exc:
        if isinstance(exc, asyncio.CancelledError) and cancelled_from_outside():
            raise  # the run is stopping
        if gateway.crash is not None:  # a tool crashed under the agent: the harness's fault
            raise ToolCrash(gateway.crash, witnessed=gateway.crash_witnessed) from None
        return Termination.AGENT_ERROR, None, agent_raised(exc, "run()")
    if gateway.crash is not None:  # the agent caught the crash; it is still the harness's
        raise ToolCrash(gateway.crash, witnessed=gateway.crash_witnessed)
    if not isinstance(answer, str):
        return (
            Termination.AGENT_ERROR,
            None,
            f"run() returned {type(answer).__name__}, not the final answer as a str",
        )
    try:
        answer = checked_turn(AgentTurn(content=str.__str__(answer)), "run()").content or ""
    except AgentFault as exc:
        return Termination.AGENT_ERROR, None, str(exc)
    await recorder.record(
        Message(role="assistant", content=answer), [], agent_s=time.perf_counter() - a0, tool_s=0.0
    )
    if recorder.loop_detected:
        return Termination.LOOP, None, recorder.loop_detected
    if session.step_limit_hit:
        return Termination.STEP_LIMIT, None, f"more than {limits.max_steps} tool calls"
    return Termination.COMPLETED, answer, None
