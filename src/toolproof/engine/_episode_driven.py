"""An agent that owns its loop (``DrivenAgent.run``): one hand-off, its calls recorded.

The episode loop (:mod:`.episode`) hands such an agent the task and the tools once; the
agent calls tools through the :class:`~.session.DrivenSession` (recorded step by step,
with the step limit and loop guard) and returns its final answer. A task with further
user turns is refused before this (``turns.refuse_driven``): such an agent cannot take
a follow-up user message.
"""

from __future__ import annotations

import asyncio
import time

from toolproof.agents import AgentInfraError, AgentTurn, DrivenAgent, agent_session
from toolproof.agents._outage import UNOBSERVED, take_observed_outage
from toolproof.agents.limits import AgentFault, checked_turn
from toolproof.spec import TaskInstance
from toolproof.tools import ToolCrash, ToolGateway
from toolproof.trajectory import Message, Termination

from ._agent_code import AGENT_RAISES, agent_raised, cancelled_from_outside
from .session import DrivenSession, Recorder


async def drive(
    agent: DrivenAgent,
    recorder: Recorder,
    gateway: ToolGateway,
    instance: TaskInstance,
    prompt: list[Message],
) -> tuple[Termination, str | None, str | None]:
    """Hand the task to an agent that owns its loop; its calls are recorded as it makes them.

    Returns:
        The termination, the final answer (when completed) and the error text.

    Raises:
        ToolCrash: a tool crashed under the agent (the harness's, whatever the agent did).
    """
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
