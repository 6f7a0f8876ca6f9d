"""``python:`` agents on their own thread: copies in, checked turns out, nothing escapes."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import toolproof_test_agents as test_agents

from toolproof.agents import AgentTurn, EpisodeContext, Observation, ToolSession
from toolproof.agents.builtin._own_thread import on_own_thread
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.spec import Limits, Task, render
from toolproof.trajectory import Termination, Trajectory, Usage
from toolproof_helpers import make_task


async def _run(agent: object, **limits: Any) -> Trajectory:
    instance = render(
        Task.model_validate(make_task()),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(**limits),
        system_prompt="s",
    )

    def factory(ctx: EpisodeContext) -> Any:
        return on_own_thread(agent, "test")  # type: ignore[arg-type]

    trajectory, _ = await run_episode(instance, factory, EpisodeOptions(agent_label="t"))
    return trajectory


async def test_act_runs_on_another_thread_and_a_plain_def_act_works() -> None:
    threads: list[str] = []

    class Plain:
        def act(self, observation: Observation) -> AgentTurn:
            threads.append(threading.current_thread().name)
            if observation.step == 0:
                return test_agents.calls(("get_stock", {"product_id": "A"}))
            return AgentTurn(content="7 units")

    trajectory = await _run(Plain())
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.final_answer == "7 units"
    assert threads and all(t == "toolproof-agent test" for t in threads)
    assert threading.current_thread().name not in threads


async def test_the_agent_cannot_rewrite_the_record_through_its_observation() -> None:
    class Rewriter:
        async def act(self, observation: Observation) -> AgentTurn:
            if observation.step == 0:
                return test_agents.calls(("get_stock", {"product_id": "A"}))
            for message in observation.messages:  # hide what it did, forge what it saw
                message.tool_calls.clear()
                message.content = "forged"
            return AgentTurn(content="7")

    trajectory = await _run(Rewriter())
    assert trajectory.termination is Termination.COMPLETED
    first = trajectory.steps[0]
    assert [c.name for c in first.message.tool_calls] == ["get_stock"]
    assert first.results[0].content == '{"product_id": "A", "stock": 7}'
    assert [m.content for m in trajectory.prompt] != ["forged", "forged"]


async def test_a_system_exit_in_a_task_the_agent_spawned_does_not_stop_its_loop() -> None:
    class Spawner:
        async def act(self, observation: Observation) -> AgentTurn:
            async def bomb() -> None:
                raise SystemExit("from a spawned task")

            self.task = asyncio.get_running_loop().create_task(bomb())
            await asyncio.sleep(0.05)
            return AgentTurn(content="7")

    trajectory = await _run(Spawner())
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.final_answer == "7"


async def test_a_driven_agent_calls_tools_and_records_usage_from_its_thread() -> None:
    seen: list[Any] = []

    class Driven:
        async def run(self, session: ToolSession) -> str:
            seen.append(threading.current_thread().name)
            result = await session.call_tool("get_stock", {"product_id": "A"})
            result.content = "tampered"  # its copy, not the record's
            session.record_usage(Usage(input_tokens=3, output_tokens=1))
            refused = await session.call_tool("get_stock", {"product_id": {1, 2}})  # type: ignore[dict-item]
            seen.append(refused)
            return "7"

    trajectory = await _run(Driven())
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert seen[0] == "toolproof-agent test"
    assert trajectory.steps[0].results[0].content == '{"product_id": "A", "stock": 7}'
    assert trajectory.usage().input_tokens == 3
    assert seen[1].error_kind == "invalid_arguments" and "not JSON data" in seen[1].content


async def test_a_sleeping_agent_times_out_and_its_close_does_not_wait_for_it() -> None:
    release = threading.Event()

    class Sleeper:
        closed = False

        def act(self, observation: Observation) -> AgentTurn:
            release.wait(30)
            return AgentTurn(content="late")

        def close(self) -> None:
            Sleeper.closed = True

    try:
        trajectory = await _run(Sleeper(), step_timeout_s=0.5)
    finally:
        release.set()
    assert trajectory.termination is Termination.TIMEOUT
    assert "took longer than 0.5s" in (trajectory.error or "")
    assert not Sleeper.closed  # still busy: not asked to close, left to end on its own


async def test_an_agent_closes_on_its_thread() -> None:
    closed: list[str] = []

    class Closer:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="7")

        async def aclose(self) -> None:
            closed.append(threading.current_thread().name)

    trajectory = await _run(Closer())
    assert trajectory.termination is Termination.COMPLETED
    assert closed == ["toolproof-agent test"]


# Threads are reused from episode to episode, loops are not: nothing one agent leaves
# behind runs on, or is seen by, the next.


async def test_a_task_the_agent_left_running_is_cancelled_when_its_episode_ends() -> None:
    ticks: list[int] = []
    loops: list[asyncio.AbstractEventLoop] = []

    async def forever() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    def own_factory(loop: Any, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        return asyncio.Task(coro, loop=loop)

    class Leaves:
        async def act(self, observation: Observation) -> AgentTurn:
            loop = asyncio.get_running_loop()
            loops.append(loop)
            loop.set_task_factory(own_factory)
            loop.call_later(0.2, ticks.append, 2)  # a timer, not a task
            self.task = loop.create_task(forever())
            return AgentTurn(content="7")

    assert (await _run(Leaves())).termination is Termination.COMPLETED
    await asyncio.sleep(0.4)
    seen = len(ticks)
    await asyncio.sleep(0.3)
    assert seen > 0 and len(ticks) == seen and 2 not in ticks  # nothing runs on

    class Next:
        async def act(self, observation: Observation) -> AgentTurn:
            loop = asyncio.get_running_loop()
            loops.append(loop)
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            return AgentTurn(content=f"{len(pending)} {loop.get_task_factory() is own_factory}")

    trajectory = await _run(Next())
    assert trajectory.final_answer == "0 False"  # nothing of the last agent's loop
    assert loops[0] is not loops[1] and loops[0].is_closed()


async def test_an_agent_with_a_dynamic_close_is_still_closed() -> None:
    closed: list[str] = []

    class Dynamic:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="7")

        def __getattr__(self, name: str) -> Any:
            if name == "close":
                return lambda: closed.append(threading.current_thread().name)
            raise AttributeError(name)

    assert (await _run(Dynamic())).termination is Termination.COMPLETED
    assert closed == ["toolproof-agent test"]


async def test_tasks_the_agent_left_see_their_cancellation_when_its_episode_ends() -> None:
    seen: list[str] = []

    async def waits(name: str) -> None:
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            seen.append(name)
            raise

    class Leaves:
        async def act(self, observation: Observation) -> AgentTurn:
            self.tasks = [  # made through the loop's own factory, each way an agent may
                asyncio.create_task(waits("create_task")),
                asyncio.ensure_future(waits("ensure_future")),
                asyncio.get_running_loop().create_task(waits("loop.create_task")),
            ]
            return AgentTurn(content="7")

    assert (await _run(Leaves())).termination is Termination.COMPLETED
    for _ in range(200):
        if len(seen) == 3:
            break
        await asyncio.sleep(0.01)
    assert sorted(seen) == ["create_task", "ensure_future", "loop.create_task"]


async def test_an_async_generator_the_agent_left_is_finalized_when_its_episode_ends() -> None:
    finalized: list[str] = []

    async def numbers() -> Any:
        try:
            while True:
                yield 1
        finally:
            finalized.append(threading.current_thread().name)

    class Leaves:
        async def act(self, observation: Observation) -> AgentTurn:
            self.gen = numbers()
            await self.gen.__anext__()  # suspended inside its try: only aclose ends it
            return AgentTurn(content="7")

    agent = Leaves()
    assert (await _run(agent)).termination is Termination.COMPLETED
    for _ in range(200):
        if finalized:
            break
        await asyncio.sleep(0.01)
    assert finalized == ["toolproof-agent test"]


async def test_a_hostile_turn_is_refused_on_its_thread_and_not_checked_twice() -> None:
    """The engine takes the own-thread wrapper's turn as checked_turn made it on the
    agent's thread; a hostile turn is still the agent's error, and only toolproof's exact
    wrapper class is taken at its word."""
    from toolproof.agents.builtin._own_thread import OwnThreadAgent
    from toolproof.agents.limits import AgentFault, engine_checked_turn

    class Surrogate:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="bad \ud800")

    trajectory = await _run(Surrogate())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "surrogate" in (trajectory.error or "")

    class Mine(OwnThreadAgent):  # a subclass is not the wrapper: its turns are checked
        pass

    hostile = AgentTurn.model_construct(content="bad \ud800", tool_calls=[])
    mine = object.__new__(Mine)
    try:
        engine_checked_turn(mine, hostile)
    except AgentFault as exc:
        assert "surrogate" in str(exc)
    else:
        raise AssertionError("a subclass's turn was not checked")
    wrapper = object.__new__(OwnThreadAgent)
    assert engine_checked_turn(wrapper, hostile) is hostile  # the wrapper's own copy
    try:
        engine_checked_turn(wrapper, "not a turn")
    except AgentFault:
        pass
    else:
        raise AssertionError("a value that is not an AgentTurn passed")
