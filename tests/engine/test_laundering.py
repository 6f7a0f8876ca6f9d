"""No laundering: whatever an agent hands the harness, its failures stay its own.

An ``infra_error`` is retried and then left out of every denominator, so an agent
that could turn its own failure into one would drop it from the score. Each test
feeds the harness one hostile shape from an in-process agent and checks that the
episode ends as the agent's (``agent_error``, or a result the agent sees), never
as ``infra_error``, and that the harness itself survives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import toolproof_test_agents as test_agents

from toolproof.agents import AgentTurn, EpisodeContext, Observation, ToolSession
from toolproof.agents.limits import MAX_ARGUMENT_CHARS, MAX_CALLS_PER_TURN, MAX_CONTENT_CHARS
from toolproof.engine import EpisodeOptions, run_episode
from toolproof.spec import Limits, Task, TaskInstance, render
from toolproof.tools import ToolContext, ToolCrash, tool
from toolproof.trajectory import Termination, ToolCall, Trajectory, Usage
from toolproof_helpers import make_task


def _instance(task: dict[str, Any] | None = None, **limits: Any) -> TaskInstance:
    return render(
        Task.model_validate(task or make_task()),
        suite="mini",
        suite_seed=1,
        epoch=0,
        limits=Limits(**limits),
        system_prompt="Use the tools.",
    )


async def _run(agent: object, task: dict[str, Any] | None = None, **limits: Any) -> Trajectory:
    def factory(ctx: EpisodeContext) -> Any:
        return agent

    trajectory, _ = await run_episode(
        _instance(task, **limits), factory, EpisodeOptions(agent_label="hostile")
    )
    return trajectory


class Once:
    """Returns what ``make`` builds on its first turn, then answers."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> Any:
        self.seen.append(observation)
        if observation.step == 0:
            return self.make()
        return AgentTurn(content="7")


def _call(**fields: Any) -> ToolCall:
    """A ToolCall whose fields are set after validation (pydantic does not check assignment)."""
    call = ToolCall(id="c0", name="get_stock", arguments={"product_id": "A"})
    for name, value in fields.items():
        setattr(call, name, value)
    return call


def _turn(**fields: Any) -> AgentTurn:
    turn = AgentTurn()
    for name, value in fields.items():
        setattr(turn, name, value)
    return turn


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {"product_id": "A"}
    loop["self"] = loop
    return loop


def _deep(levels: int) -> dict[str, Any]:
    value: Any = "A"
    for _ in range(levels):
        value = [value]
    return {"product_id": value}


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    __repr__ = __str__


HOSTILE_TURNS: dict[str, tuple[Callable[[], object], str]] = {
    "a dict instead of a turn": (lambda: {"content": "7"}, "act() returned dict, not AgentTurn"),
    "None instead of a turn": (lambda: None, "act() returned NoneType, not AgentTurn"),
    "a non-string tool name": (
        lambda: AgentTurn(tool_calls=[_call(name=42)]),
        "turn.tool_calls[0].name must be a string, got int",
    ),
    "arguments that are a list": (
        lambda: AgentTurn(tool_calls=[_call(arguments=["A"])]),
        "turn.tool_calls[0].arguments must be a JSON object, got list",
    ),
    "arguments over the size limit": (
        lambda: AgentTurn(tool_calls=[_call(arguments={"product_id": "A" * MAX_ARGUMENT_CHARS})]),
        f"the limit is {MAX_ARGUMENT_CHARS:,}",
    ),
    "arguments nested 10,000 deep": (
        lambda: AgentTurn(tool_calls=[_call(arguments=_deep(10_000))]),
        "turn.tool_calls[0].arguments nests deeper than 32 levels",
    ),
    "arguments nested past the depth limit": (
        lambda: AgentTurn(tool_calls=[_call(arguments=_deep(40))]),
        "nests deeper than 32 levels",
    ),
    "arguments holding a cycle": (
        lambda: AgentTurn(tool_calls=[_call(arguments=_cycle())]),
        "is not JSON data: ValueError: Circular reference",
    ),
    "a 5,000-digit integer argument": (
        lambda: AgentTurn(tool_calls=[_call(arguments={"product_id": 10**5000})]),
        "is not JSON data: ValueError",
    ),
    "a set as an argument": (
        lambda: AgentTurn(tool_calls=[_call(arguments={"product_id": {"A"}})]),
        "is not JSON data: TypeError: Object of type set",
    ),
    "an object whose str() raises, as an argument": (
        lambda: AgentTurn(tool_calls=[_call(arguments={"product_id": Unprintable()})]),
        "is not JSON data: TypeError",
    ),
    "a call that is not a ToolCall": (
        lambda: _turn(tool_calls=[{"name": "get_stock"}]),
        "turn.tool_calls[0] must be a ToolCall, got dict",
    ),
    "tool_calls that is not a list": (
        lambda: _turn(tool_calls="get_stock"),
        "turn.tool_calls must be a list, got str",
    ),
    "too many calls": (
        lambda: AgentTurn(tool_calls=[_call() for _ in range(MAX_CALLS_PER_TURN + 1)]),
        f"the limit is {MAX_CALLS_PER_TURN} per turn",
    ),
    "content over the size limit": (
        lambda: AgentTurn(content="x" * (MAX_CONTENT_CHARS + 1)),
        f"turn.content has {MAX_CONTENT_CHARS + 1:,} characters; the limit is",
    ),
    "content that is not a string": (
        lambda: _turn(content=Unprintable()),
        "turn.content must be a string, got Unprintable",
    ),
    "usage that is not a Usage": (
        lambda: _turn(usage=object()),
        "turn.usage must be a Usage or None, got object",
    ),
    "usage with a field of the wrong type": (
        lambda: _turn(usage=_usage(input_tokens="many")),
        "turn.usage.input_tokens must be a whole number, got str",
    ),
    "give_up that is not a bool": (
        lambda: _turn(give_up=Unprintable()),
        "turn.give_up must be a bool, got Unprintable",
    ),
    "retries that is not an int": (
        lambda: _turn(retries=2.5),
        "turn.retries must be an int from 0, got float",
    ),
}


def _usage(**fields: Any) -> Usage:
    usage = Usage()
    for name, value in fields.items():
        setattr(usage, name, value)
    return usage


@pytest.mark.parametrize("case", sorted(HOSTILE_TURNS))
async def test_a_malformed_turn_is_an_agent_error(case: str) -> None:
    make, expected = HOSTILE_TURNS[case]
    trajectory = await _run(Once(make))
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert expected in (trajectory.error or ""), trajectory.error
    assert trajectory.steps == []  # nothing of the malformed turn reached the record


async def test_a_turn_of_odd_str_subclasses_is_copied_into_plain_data() -> None:
    class Sly(str):
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("compared")

        __hash__ = str.__hash__

    agent = Once(lambda: AgentTurn(tool_calls=[_call(name=Sly("get_stock"))]))
    trajectory = await _run(agent)
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    (call,) = trajectory.steps[0].message.tool_calls
    assert type(call.name) is str and call.name == "get_stock"


class Raises:
    """``act`` raises the given exception (which may be a BaseException)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def act(self, observation: Observation) -> AgentTurn:
        raise self.exc


@pytest.mark.parametrize(
    "exc",
    [
        SystemExit(3),
        KeyboardInterrupt(),
        GeneratorExit(),
        asyncio.CancelledError("from the agent"),
        MemoryError(),
        RecursionError("deep"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_any_exception_from_agent_code_is_contained_as_an_agent_error(
    exc: BaseException,
) -> None:
    trajectory = await _run(Raises(exc))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert type(exc).__name__ in (trajectory.error or "")


async def test_a_coroutine_that_raises_is_an_agent_error() -> None:
    class LazyBomb:
        def act(self, observation: Observation) -> Any:  # a plain def returning a coroutine
            return self._boom()

        async def _boom(self) -> AgentTurn:
            await asyncio.sleep(0)
            raise ZeroDivisionError("late")

    trajectory = await _run(LazyBomb())
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "ZeroDivisionError: late" in (trajectory.error or "")


async def test_an_exception_that_cannot_describe_itself_is_still_an_agent_error() -> None:
    class Mute(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no words")

    trajectory = await _run(Raises(Mute()))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert (trajectory.error or "").startswith("Mute")


async def test_the_runs_own_cancellation_is_not_swallowed() -> None:
    started = asyncio.Event()

    class Waits:
        async def act(self, observation: Observation) -> AgentTurn:
            started.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    episode = asyncio.ensure_future(_run(Waits()))
    await started.wait()
    episode.cancel()
    with pytest.raises(asyncio.CancelledError):
        await episode
    assert episode.cancelled()


async def test_a_close_that_raises_system_exit_is_contained() -> None:
    class ExitsOnClose:
        async def act(self, observation: Observation) -> AgentTurn:
            return AgentTurn(content="7")

        async def aclose(self) -> None:
            raise SystemExit(1)

    trajectory = await _run(ExitsOnClose())
    assert trajectory.termination is Termination.COMPLETED


# Agent-driven agents -----------------------------------------------------------------


class Driven:
    def __init__(self, body: Callable[[ToolSession], Any]) -> None:
        self.body = body
        self.results: list[Any] = []

    async def run(self, session: ToolSession) -> Any:
        return await self.body(session)


@pytest.mark.parametrize(
    "exc",
    [SystemExit(0), KeyboardInterrupt(), asyncio.CancelledError(), ToolCrash("I say so")],
    ids=lambda e: type(e).__name__,
)
async def test_a_driven_agent_raising_inside_a_tool_callback_is_an_agent_error(
    exc: BaseException,
) -> None:
    async def body(session: ToolSession) -> str:
        async def callback() -> None:  # what a framework calls for a tool
            await session.call_tool("get_stock", {"product_id": "A"})
            raise exc

        await callback()
        return "7"

    trajectory = await _run(Driven(body))
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert type(exc).__name__ in (trajectory.error or "")
    assert len(trajectory.steps) == 1  # its call is kept


async def test_a_driven_agents_malformed_calls_are_refused_to_the_agent() -> None:
    seen: list[Any] = []

    async def body(session: ToolSession) -> str:
        seen.append(await session.call_tool(42, {"product_id": "A"}))  # type: ignore[arg-type]
        seen.append(await session.call_tool("get_stock", ["A"]))  # type: ignore[arg-type]
        seen.append(await session.call_tool("get_stock", {"product_id": 10**5000}))
        seen.append(await session.call_tool("get_stock", _deep(10_000)))
        return "7"

    trajectory = await _run(Driven(body))
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert [r.error_kind for r in seen] == ["invalid_arguments"] * 4
    assert "tool name must be a string, got int" in seen[0].content
    assert "must be a JSON object" in seen[1].content
    assert "not JSON data" in seen[2].content and "nests deeper than 32 levels" in seen[3].content


async def test_a_driven_agent_returning_a_non_string_is_an_agent_error() -> None:
    async def body(session: ToolSession) -> object:
        return {"answer": 7}

    trajectory = await _run(Driven(body))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "run() returned dict, not the final answer as a str" in (trajectory.error or "")


async def test_a_driven_agent_returning_a_huge_answer_is_an_agent_error() -> None:
    async def body(session: ToolSession) -> str:
        return "7" * (MAX_CONTENT_CHARS + 1)

    trajectory = await _run(Driven(body))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "turn.content has" in (trajectory.error or "")


# Tools ---------------------------------------------------------------------------------


@pytest.fixture
def echo_tools(restore_registries: None) -> Iterator[tuple[str, str]]:
    @tool(name="tp_test_power")
    def power(ctx: ToolContext, exponent: int) -> dict[str, int]:
        """Ten to the given power (a result too long to print past 4,300 digits)."""
        return {"value": 10**exponent}

    @tool(name="tp_test_crashing")
    def crashing(ctx: ToolContext) -> str:
        """Always crashes."""
        raise RuntimeError("bug in the tool")

    yield "tp_test_power", "tp_test_crashing"


async def test_a_tool_result_that_cannot_be_shown_is_an_error_the_agent_sees(
    echo_tools: tuple[str, str],
) -> None:
    power, _ = echo_tools
    task = make_task(tools=["get_stock", power])
    agent = Once(lambda: test_agents.calls((power, {"exponent": 5000}), (power, {"exponent": 3})))
    trajectory = await _run(agent, task=task)
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    big, small = trajectory.steps[0].results
    assert big.is_error and big.error_kind == "tool_error"
    assert "the tool's result cannot be shown (ValueError" in big.content
    assert small.content == '{"value": 1000}'


async def test_a_driven_agent_cannot_hide_a_real_tool_crash(echo_tools: tuple[str, str]) -> None:
    _, crashing = echo_tools

    async def body(session: ToolSession) -> str:
        with contextlib.suppress(ToolCrash):
            await session.call_tool(crashing, {})
        return "7"

    def factory(ctx: EpisodeContext) -> Any:
        return Driven(body)

    task = make_task(tools=["get_stock", crashing])
    trajectory, _ = await run_episode(_instance(task), factory, EpisodeOptions(agent_label="d"))
    # A crash stays visible (the agent cannot hide it) and stays in the score: the agent's
    # arguments set it off, so it is no way out of the denominator.
    assert trajectory.termination is Termination.AGENT_ERROR
    assert (trajectory.error or "").startswith("toolproof fault: ")
    assert "crashed: RuntimeError: bug in the tool" in (trajectory.error or "")


async def test_the_runs_own_cancellation_of_a_driven_agent_is_not_swallowed() -> None:
    started = asyncio.Event()

    async def body(session: ToolSession) -> str:
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    episode = asyncio.ensure_future(_run(Driven(body)))
    await started.wait()
    episode.cancel()
    with pytest.raises(asyncio.CancelledError):
        await episode
