"""One episode, top to bottom: open, each turn, follow-ups, stop, the scoring hand-off.

Harness-driven (the engine owns the loop)::

    open       the world, the tools and the user (_episode_setup.open_episode); the prompt:
               the task's description, or the user's first message (a conversation)
    each turn  agent.act(observation) -> turn; its tool calls through the gateway; a Step
               recorded (timing, tokens, state digest, snapshot)
    follow-up  a reply without tool calls goes to the user (toolproof.users.EpisodeUser):
               a next user message (the task's user_turns, or the user in conversation)
               starts the next user turn; otherwise the reply is the final answer
    stop       a final answer or giving up; a limit (steps, time, loop); a tool or policy
               that ended the episode; an error
    score      the trajectory handed to scoring (score_and_close), off the event loop

An agent that owns its loop gets one hand-off instead (:func:`._episode_driven.drive`).
This module is the only place that writes the turn protocol (the annotations named in
:mod:`.turns`); what it calls sits below it and never calls back.

Every episode ends with a termination reason. The rule (invariant 4, see
``docs/failure-modes.md``): whatever agent-controlled input causes (a turn of the
wrong shape or size, an exception of any kind raised by the agent's code, even
``SystemExit`` or a stray ``CancelledError``) is the agent's (``agent_error``);
only a failure of the harness or the infrastructure (a provider outage after
retries, a tool that crashed on valid input, a missing sandbox backend, a disk
error, the user model failing) is an ``infra_error``, which is retried and kept out
of the scores.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from typing import Any

from toolproof.agents import Agent, AgentFactory, AgentInfraError, Observation
from toolproof.agents._outage import UNOBSERVED, take_observed_outage
from toolproof.agents.base import drives
from toolproof.agents.limits import engine_checked_turn
from toolproof.scoring import (
    ReferenceEffect,
    Score,
    ScoringContext,
    changed_nothing,
    needs_reference,
    score_episode,
)
from toolproof.scoring.checks.custom import needs_thread
from toolproof.spec import SpecError, TaskInstance
from toolproof.tools import ToolCrash
from toolproof.tools.answer import submitted, submitted_text
from toolproof.tools.policy import requested_stop
from toolproof.trajectory import Message, Termination, Trajectory
from toolproof.users import FollowUp
from toolproof.worlds import World, WorldSnapshot

from ._agent_code import AGENT_RAISES, agent_raised, close_agent, error_text
from ._copies import AgentCopies
from ._episode_driven import drive
from ._episode_setup import Continuation, EpisodeOptions, EpisodeParts, open_episode
from ._reference import reference_effect
from .building import BuildTimeout, build_agent_for, stop_commands
from .faults import crash_outcome, harness_fault, unscored
from .session import Recorder, off_loop
from .side_models import judging
from .turns import (
    CONVERSATION_END,
    NEXT_USER_TURN,
    OPENED_BY,
    USER_BY,
    USER_TURN,
    conversation_turns,
    current_user_turn,
    refuse_driven,
)

__all__ = ["Continuation", "EpisodeOptions", "run_episode"]


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
    parts: EpisodeParts | None = None
    initial: WorldSnapshot | None = None
    acting = False  # the agent has been handed the episode: its input may set faults off
    try:
        # ---- open: the world, the tools, the user; the prompt or the user's first message
        parts = await open_episode(instance, options, world)
        recorder, gateway, user = parts.recorder, parts.gateway, parts.user
        initial = parts.initial
        opened_by: str | None = None
        if continuation is not None:  # time travel: pick up after the recorded steps
            initial = continuation.initial
            recorder.steps.extend(continuation.history)
            for step in continuation.history:
                for call in step.message.tool_calls:
                    gateway.note_past_call(call)
            prompt[:] = continuation.prompt or prompt
            asked = next((m.content for m in reversed(prompt) if m.role == "user"), None)
            turns = conversation_turns(continuation.history)
            user.resume(asked, turns, continuation.history)
        else:
            opening = await user.open()  # a user in conversation opens
            if opening is not None:
                prompt[-1] = Message(role="user", content=opening.text)
                opened_by = opening.by
        gateway.offer_only(instance.task.hidden_tools(current_user_turn(recorder.steps)))
        try:  # the user's factory on a thread: one that blocks stalls only this episode
            agent = await build_agent_for(  # the key: built-ins only
                factory, instance, gateway.schemas, instance.limits.step_timeout_s
            )
        except BuildTimeout as exc:
            termination, error = Termination.TIMEOUT, str(exc)
        else:
            # ---- the turns: the agent's loop, or ours
            acting = True
            try:
                if drives(agent):
                    refuse_driven(instance, options.agent_label)
                    termination, answer, error = await drive(
                        agent, recorder, gateway, instance, prompt
                    )
                else:
                    termination, answer, error = await _loop(
                        agent, parts, instance, prompt, t0, options.model_slots, opened_by
                    )
            finally:
                await close_agent(agent)
        # ---- stop: a tool or policy ended the episode (its last calls refused)
        stop = requested_stop(parts.ctx)
        if stop is not None and termination is not Termination.INFRA_ERROR:
            termination, answer, error = stop[0], None, stop[1]
            if stop[0] is Termination.COMPLETED and submitted(parts.ctx) is not None:
                # submit_answer ended it: the typed value is the final answer
                answer, error = submitted_text(parts.ctx), None
        failed = _user_failed(parts)
        if failed is not None:  # the harness's model
            termination, answer, error = Termination.INFRA_ERROR, None, failed
    except ToolCrash as exc:  # infra only when witnessed; else the agent's arguments set it off
        failed = _user_failed(parts)  # the harness's model
        termination, error = (Termination.INFRA_ERROR, failed) if failed else crash_outcome(exc)
    except SpecError:  # the run's configuration cannot run this task: the run stops
        if own_world:
            world.close()
        raise
    except Exception as exc:  # a harness failure outside the agent's turn
        failed = _user_failed(parts)
        if failed is not None:  # the harness's model
            termination, error = Termination.INFRA_ERROR, failed
        elif acting:  # after the agent acted (a workspace it filled, ...): no witness
            termination, error = harness_fault("run", exc)
        else:  # building the world or the agent's tools: nothing of the agent's yet
            termination, error = Termination.INFRA_ERROR, error_text(exc)
    except asyncio.CancelledError:  # the run is stopping: nothing to score, clean up
        stop_commands(world)  # a sandboxed command on a tool thread is killed now
        if own_world:
            world.close()
        raise
    trajectory = Trajectory(
        episode_id=instance.key,
        task_id=instance.task.id,
        epoch=instance.epoch,
        seed=instance.seed,
        agent=options.agent_label,
        prompt=prompt,
        steps=parts.recorder.steps if parts is not None else [],
        final_answer=answer,
        termination=termination,
        error=error,
        started_at=started_at,
        duration_s=time.perf_counter() - t0,
        parent=continuation.parent if continuation is not None else None,
    )
    # ---- score: the one hand-off back (checks on a snapshot the agent cannot touch)
    return await score_and_close(instance, trajectory, initial, world, own_world, options)


async def score_and_close(
    instance: TaskInstance,
    trajectory: Trajectory,
    initial: WorldSnapshot | None,
    world: World,
    own_world: bool,
    options: EpisodeOptions,
) -> tuple[Trajectory, Score]:
    """Score the ended episode off the event loop and close the world if ``own_world``.

    Toolproof's own scoring failing is this episode's fault (:func:`.faults.unscored`),
    not the run's; a configuration that cannot score the task stops the run.

    Raises:
        SpecError: the run's configuration cannot score this task.
    """
    try:  # one hop: deleting a big workspace takes a while too
        final: WorldSnapshot | None = None
        reference: ReferenceEffect | None = None
        if initial is not None and needs_reference(instance.task):  # collateral's measure
            final = await off_loop(world, world.snapshot)
            if not changed_nothing(instance.task, trajectory, initial, final):
                reference = await reference_effect(instance, options, _loop)
        score = await off_loop(
            world,
            lambda: _score(
                instance, trajectory, initial, world, own_world, options, reference, final
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
    except SpecError:
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
    options: EpisodeOptions,
    reference: ReferenceEffect | None = None,
    final: WorldSnapshot | None = None,
) -> Score:
    """Snapshot the final state (unless ``final`` is it), score the episode, close the
    world if ``close``.

    Runs on a thread for a workspace world (the checks may walk or read it).
    """
    try:
        if initial is None:
            initial = world.snapshot()
        if final is None:
            final = world.snapshot()
        with judging(options.side, instance):
            return score_episode(
                ScoringContext(
                    instance=instance,
                    trajectory=trajectory,
                    initial=initial,
                    final=final,
                    world=world,
                    task_dir=options.fixtures_base,
                    reference=reference,
                )
            )
    finally:
        if close:
            world.close()


def _user_failed(parts: EpisodeParts | None) -> str | None:
    """The model-played user's provider failure the gateway witnessed, else None."""
    link = parts.user_link if parts is not None else None
    return link.infra_error if link is not None else None


async def _loop(
    agent: Agent,
    parts: EpisodeParts,
    instance: TaskInstance,
    prompt: list[Message],
    t0: float,
    model_slots: asyncio.Semaphore | None = None,
    opened_by: str | None = None,
) -> tuple[Termination, str | None, str | None]:
    """The harness-driven turns; returns the termination, the final answer and the error."""
    recorder: Recorder = parts.recorder
    gateway, user = parts.gateway, parts.user
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
    turn_index = current_user_turn(recorder.steps)
    for step in range(len(recorder.steps), limits.max_steps):
        # ---- stop: out of time
        remaining = limits.total_timeout_s - (time.perf_counter() - t0)
        if remaining <= 0:
            return Termination.TIMEOUT, None, f"episode exceeded {limits.total_timeout_s:g}s"
        # ---- the agent's turn: its own copies (see AgentCopies), made without a deepcopy
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
                    turn = engine_checked_turn(agent, await agent.act(observation))
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
        if step == 0 and opened_by is not None:  # the conversation's opening: who wrote it
            notes = {**(notes or {}), OPENED_BY: opened_by}
        # ---- follow-up: a reply without tool calls goes to the user
        follow: FollowUp | None = None
        if user.active:
            notes = {**(notes or {}), USER_TURN: turn_index}
            if not turn.tool_calls and not turn.give_up:
                follow = await user.after(turn.content, turn_index)
                t0 += follow.user_s  # the user's time is not the agent's
                if follow.by is not None:
                    notes[USER_BY] = follow.by
                if follow.why is not None:
                    notes[CONVERSATION_END] = follow.why
        said = None  # the user's next message, or closing words
        if follow is not None and follow.text is not None:
            said = Message(role="user", content=follow.text)
        if follow is not None and not follow.ends and said is not None:
            # the reply ends this user turn; the next user message starts the next one
            message = Message(role="assistant", content=turn.content)
            turn_index += 1
            await recorder.record(
                message,
                [],
                agent_s=agent_s,
                tool_s=0.0,
                usage=turn.usage,
                observations=[said],
                annotations={**(notes or {}), NEXT_USER_TURN: turn_index},
            )
            gateway.offer_only(instance.task.hidden_tools(turn_index))
            tools = AgentCopies(gateway.schemas)  # the turn may offer more tools
            messages.extend([message, said])
            continue
        # ---- stop: the final answer (the user's closing words, if any, after it)
        if not turn.tool_calls:
            message = Message(role="assistant", content=turn.content)
            await recorder.record(
                message,
                [],
                agent_s=agent_s,
                tool_s=0.0,
                usage=turn.usage,
                observations=[said] if said is not None else [],
                annotations=notes,
            )
            final = Termination.GAVE_UP if turn.give_up else Termination.COMPLETED
            return final, turn.content or "", None
        # ---- the calls, through the gateway; the step recorded
        calls, results, tool_s = await recorder.execute(  # checked_turn's copies: the harness's
            turn.tool_calls, limits.loop_threshold, owned=True
        )
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
        # ---- stop: a limit or policy of the episode was hit, or a loop
        stop = requested_stop(gateway.ctx)
        if stop is not None:
            return stop[0], None, stop[1]
        if recorder.loop_detected:
            return Termination.LOOP, None, recorder.loop_detected
    return Termination.STEP_LIMIT, None, f"no answer after {limits.max_steps} steps"
