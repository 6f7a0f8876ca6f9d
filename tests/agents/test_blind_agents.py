"""In-process agents see only what a remote agent would: no solution, checks, params or world.

A ``python:`` agent (and a driven one) walks everything toolproof hands it, recursively (see
``snoop_agents``), on built-in tasks of every suite; none of the task's answer key may be in
what it reached. Built-ins that need the key get it through ``with_key`` only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import snoop_agents
from snoop_agents import Walk

from toolproof.agents import (
    EpisodeContext,
    KeyedFactory,
    Observation,
    ToolSession,
    agent_session,
    build_agent,
    episode_context,
    make_agent,
    parse_agent_spec,
    with_key,
)
from toolproof.agents.builtin import python_agent
from toolproof.engine import RunConfig, Runner
from toolproof.engine.session import DrivenSession, Recorder
from toolproof.spec import Limits, TaskInstance, load_suite, render, resolve_suite_path
from toolproof.tools import ToolContext, ToolGateway
from toolproof.trajectory import ToolResult, ToolSchema
from toolproof.worlds import World

HERE = Path(__file__).parent
_KEY_MODULES = ("toolproof.spec.", "toolproof.worlds.", "toolproof.tools.", "toolproof.engine.")
"""Instances of these modules' types are harness state (Limits excepted)."""


def _tasks() -> dict[str, list[str]]:
    """A few tasks of every built-in suite: the first, one with a user, an attack, params."""
    chosen: dict[str, list[str]] = {}
    for suite in ("core", "security", "lint", "repo-doctor"):
        tasks = load_suite(suite).tasks
        picks = [tasks[0]]
        picks += [t for t in tasks if t.user is not None][:1]
        picks += [t for t in tasks if t.attack is not None][:1]
        picks += [t for t in tasks if t.params][:1]
        chosen[suite] = list(dict.fromkeys(t.id for t in picks))
    return chosen


def _instance(suite: str, task_id: str) -> TaskInstance:
    loaded = load_suite(suite)
    return render(
        loaded.task(task_id),
        suite=loaded.config.name,
        suite_seed=loaded.config.seed,
        epoch=0,
        limits=Limits(),
        system_prompt="",
    )


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield str(value)


def _key(instance: TaskInstance) -> set[str]:
    """The answer key as strings: reference answer, solution call arguments, check values."""
    task = instance.task
    calls = [
        c for item in task.solution.calls for c in (item if isinstance(item, list) else [item])
    ]
    values = {task.solution.answer, *(v for c in calls for v in _leaves(c.args))}
    values |= {v for check in task.success for v in _leaves(check.model_dump(mode="json"))}
    values |= {v for v in _leaves(instance.params)}
    return {v for v in values if len(v) >= 4}


def _ambient() -> Walk:
    """What the classes and functions an agent is handed lead to, with no episode at all."""
    walk = Walk()
    walk.add(
        EpisodeContext,
        Observation,
        type(agent_session(_FakeSession())),
        make_agent,
        episode_context,
        python_agent.build,
        snoop_agents.Snooper,
        snoop_agents.DrivenSnooper,
        KeyedFactory,
    )
    return walk


class _FakeSession:
    system_prompt = "s"
    prompt = "p"
    tools: list[Any] = []


def _harness_state(walk: Walk, ambient: Walk) -> list[str]:
    found = []
    for obj in walk.objects.values():
        kind = type(obj)
        if isinstance(obj, type) or kind is Limits or id(obj) in ambient.objects:
            continue
        if kind.__module__.startswith(_KEY_MODULES) or isinstance(obj, TaskInstance):
            found.append(f"{kind.__module__}.{kind.__qualname__}")
    return sorted(set(found))


def _seen(run: Path) -> dict[str, str]:
    """By task: all the text its agents were shown (prompts, tool results)."""
    parts: dict[str, list[str]] = {}
    for line in (run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        trajectory = json.loads(line)
        text = parts.setdefault(trajectory["task_id"], [])
        text += [m.get("content") or "" for m in trajectory["prompt"]]
        text += [r["content"] for step in trajectory["steps"] for r in step["results"]]
    return {task: "\n".join(text) for task, text in parts.items()}


Snooped = dict[str, tuple[list[Walk], str]]
"""By ``suite/task``: the walks of both snoopers, and the text their episodes showed them."""


@pytest.fixture(scope="module")
def snooped(tmp_path_factory: pytest.TempPathFactory) -> Snooped:
    """Run both snoopers on the chosen tasks of every suite."""
    import sys

    sys.path.insert(0, str(HERE))
    walks: Snooped = {}
    try:
        for suite, task_ids in _tasks().items():
            snoop_agents.REACHED.clear()
            seen: dict[str, str] = {}
            for name in ("Snooper", "DrivenSnooper"):
                config = RunConfig(
                    suite=str(resolve_suite_path(suite)),
                    agent=f"python:snoop_agents:{name}",
                    tasks=task_ids,
                    snapshots=False,
                )
                out = tmp_path_factory.mktemp("run") / "run"
                asyncio.run(Runner(config, out, parallel=2).run())
                for task, text in _seen(out).items():
                    seen[task] = seen.get(task, "") + "\n" + text
            for task_id in task_ids:
                walks[f"{suite}/{task_id}"] = (snoop_agents.REACHED.get(task_id, []), seen[task_id])
    finally:
        sys.path.remove(str(HERE))
    return walks


def test_the_walk_finds_the_key_when_it_is_handed_over() -> None:
    """A control: the same walk over an instance finds every key value and type."""
    instance = _instance("core", load_suite("core").tasks[0].id)
    walk = Walk()
    walk.add(instance)
    assert _key(instance) <= walk.strings
    assert "toolproof.spec.render.TaskInstance" in _harness_state(walk, Walk())


def test_an_in_process_agent_finds_no_part_of_the_key(snooped: Snooped) -> None:
    ambient = _ambient()
    checked = 0
    for label, (walks, seen) in snooped.items():
        suite, task_id = label.split("/")
        instance = _instance(suite, task_id)
        assert len(walks) == 2, f"{label}: both snoopers ran"
        tools = json.dumps([t.model_dump(mode="json") for w in walks for t in _schemas(w)])
        visible = f"{seen}\n{tools}"
        for walk in walks:
            secret = {v for v in _key(instance) if v not in ambient.strings and v not in visible}
            assert instance.task.solution.answer.strip() == "" or secret, label
            leaked = sorted(v for v in secret if v in walk.strings)
            assert leaked == [], f"{label}: the agent reached parts of the key: {leaked[:5]}"
            assert _harness_state(walk, ambient) == [], label
            checked += len(secret)
    assert checked > 50, "the test looked for enough key values to mean something"


def test_the_factory_gets_copies_of_what_the_prompt_says() -> None:
    instance = _instance("core", load_suite("core").tasks[0].id)
    ctx = episode_context(instance, [])
    assert (ctx.task_id, ctx.suite, ctx.epoch) == (instance.task.id, "core", 0)
    assert [m.content for m in ctx.messages] == [instance.system_prompt, instance.task.description]
    assert ctx.limits == instance.limits and ctx.limits is not instance.limits
    assert not hasattr(ctx, "instance") and not hasattr(ctx, "__dict__")


def test_only_a_keyed_factory_is_handed_the_instance() -> None:
    instance = _instance("core", load_suite("core").tasks[0].id)
    seen: list[Any] = []
    made = make_agent(with_key(lambda ctx, inst: seen.append(inst) or ctx), instance, [])  # type: ignore[arg-type, func-returns-value]
    assert seen == [instance] and isinstance(made, EpisodeContext)
    plain = make_agent(lambda *args: args, instance, [])  # type: ignore[arg-type, return-value]
    assert len(plain) == 1 and isinstance(plain[0], EpisodeContext)  # type: ignore[arg-type]


def test_a_keyed_factory_called_as_a_plain_one_refuses() -> None:
    factory = build_agent(parse_agent_spec("oracle"))
    ctx = episode_context(_instance("core", load_suite("core").tasks[0].id), [])
    with pytest.raises(TypeError, match="can only be made by the engine"):
        factory(ctx)


async def test_the_session_view_holds_the_engine_session_weakly() -> None:
    """The view reaches the engine's session weakly: once the episode is gone, calls fail."""
    instance = _instance("core", load_suite("core").tasks[0].id)
    world = World(instance.task.world)
    try:
        gateway = ToolGateway([], ToolContext(world=world, instance=instance))
        session = DrivenSession(
            recorder=Recorder(instance, world, gateway),
            system_prompt="s",
            prompt="p",
            tools=[],
            max_steps=3,
            loop_threshold=3,
        )
        view = agent_session(session)
        assert (view.system_prompt, view.prompt, view.tools) == ("s", "p", [])
        del session
        with pytest.raises(RuntimeError, match="the episode is over"):
            await view.call_tool("anything", {})
    finally:
        world.close()


def test_results_an_agent_reads_carry_no_timing(snooped: Snooped) -> None:
    for label, (walks, _) in snooped.items():
        results = [o for w in walks for o in w.instances_of(ToolResult)]
        assert results, f"{label}: the driven snooper got a result"
        assert [r.duration_s for r in results if r.duration_s] == [], label


def _schemas(walk: Walk) -> list[ToolSchema]:
    return walk.instances_of(ToolSchema)


def test_an_agent_that_edits_its_observation_changes_nothing_recorded() -> None:
    """The history is the agent's copy: deleting its past calls does not rewrite the record."""
    from toolproof.agents import AgentTurn
    from toolproof.engine.episode import EpisodeOptions, run_episode
    from toolproof.trajectory import ToolCall

    class Rewriter:
        async def act(self, observation: Observation) -> AgentTurn:
            if observation.step == 0:
                call = ToolCall(id="c0", name="get_stock", arguments={"product_id": "A"})
                return AgentTurn(tool_calls=[call])
            for message in observation.messages:
                message.tool_calls.clear()
                message.content = "rewritten"
            observation.tools[0].description = "rewritten"
            return AgentTurn(content="done")

    instance = _instance("core", "stock-sum")
    options = EpisodeOptions(agent_label="rewriter")
    trajectory, _ = asyncio.run(run_episode(instance, lambda ctx: Rewriter(), options))
    assert [c.name for c in trajectory.steps[0].message.tool_calls] == ["get_stock"]
    assert trajectory.steps[0].results[0].content != "rewritten"
    assert [m.content for m in trajectory.prompt] == [
        instance.system_prompt,
        instance.task.description,
    ]


def test_an_agent_that_edits_its_past_calls_changes_nothing_recorded() -> None:
    from toolproof.agents import AgentTurn
    from toolproof.engine.episode import EpisodeOptions, run_episode
    from toolproof.trajectory import ToolCall

    class Forger:
        def __init__(self) -> None:
            self.call = ToolCall(id="c0", name="get_stock", arguments={"product_id": "A"})

        async def act(self, observation: Observation) -> AgentTurn:
            if observation.step == 0:
                return AgentTurn(tool_calls=[self.call])
            self.call.name = "calculate"
            self.call.arguments["product_id"] = "B"
            return AgentTurn(content="done")

    class DrivenForger:
        async def run(self, session: ToolSession) -> str:
            arguments = {"product_id": "A"}
            await session.call_tool("get_stock", arguments)
            arguments["product_id"] = "B"
            return "done"

    for agent in (Forger(), DrivenForger()):
        options = EpisodeOptions(agent_label="forger")
        made = _instance("core", "stock-sum")
        trajectory, _ = asyncio.run(run_episode(made, lambda ctx, a=agent: a, options))  # type: ignore[misc]
        (call,) = trajectory.steps[0].message.tool_calls
        assert (call.name, call.arguments) == ("get_stock", {"product_id": "A"}), agent
