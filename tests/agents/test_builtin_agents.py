"""The built-in agents: oracle plays the solution, noop does nothing, random is seeded and valid."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from toolproof.agents import AgentTurn, Observation, build_agent, make_agent, parse_agent_spec
from toolproof.agents.builtin.random_agent import random_arguments
from toolproof.spec import Limits, Task, TaskInstance, load_suite, render
from toolproof.tools import load_builtin, registry, resolve_tools
from toolproof.trajectory import ToolSchema
from toolproof_helpers import make_task


def _instance(task: Task, epoch: int = 0) -> TaskInstance:
    return render(task, suite="mini", suite_seed=1, epoch=epoch, limits=Limits(), system_prompt="s")


def _ctx(task: Task, epoch: int = 0) -> tuple[TaskInstance, list[ToolSchema]]:
    """An episode as the engine makes its agent: the instance and the tool schemas."""
    return _instance(task, epoch), [t.schema for t in resolve_tools(task)]


async def _turns(
    spec: str, ctx: tuple[TaskInstance, list[ToolSchema]], n: int = 6, **options: Any
) -> list[AgentTurn]:
    agent = make_agent(build_agent(parse_agent_spec(spec, options)), *ctx)
    return [
        await agent.act(Observation(messages=[], tools=ctx[1], step=step))  # type: ignore[union-attr]
        for step in range(n)
    ]


async def test_oracle_plays_each_reference_turn_then_answers() -> None:
    calls = [
        [
            {"tool": "get_stock", "args": {"product_id": "A"}},
            {"tool": "get_stock", "args": {"product_id": "B"}},
        ],
        {"tool": "adjust_stock", "args": {"product_id": "A", "delta": 1}},
    ]
    task = Task.model_validate(make_task(solution={"calls": calls, "answer": "done"}))
    turns = await _turns("oracle", _ctx(task), n=3)
    assert [[(c.name, c.arguments) for c in t.tool_calls] for t in turns[:2]] == [
        [("get_stock", {"product_id": "A"}), ("get_stock", {"product_id": "B"})],
        [("adjust_stock", {"product_id": "A", "delta": 1})],
    ]
    assert len({c.id for t in turns for c in t.tool_calls}) == 3
    assert turns[2] == AgentTurn(content="done")


async def test_noop_answers_at_once() -> None:
    ctx = _ctx(Task.model_validate(make_task()))
    assert (await _turns("noop", ctx, n=1))[0] == AgentTurn(content="")
    assert (await _turns("noop", ctx, n=1, answer="done"))[0].content == "done"


def _all_builtin_schemas() -> list[ToolSchema]:
    load_builtin()
    schemas = [t.schema for t in registry().values()]
    for suite_task in load_suite("core").tasks:
        schemas.extend(t.schema for t in resolve_tools(suite_task))
    return schemas


def test_random_arguments_are_schema_valid_for_every_builtin_tool() -> None:
    rng = random.Random(5)
    for schema in _all_builtin_schemas():
        if '"pattern"' in json.dumps(schema.parameters):
            continue  # regular expressions are beyond a random agent (a known limitation)
        validator = Draft202012Validator(schema.parameters)
        for _ in range(30):
            arguments = random_arguments(schema.parameters, rng)
            errors = [e.message for e in validator.iter_errors(arguments)]
            assert not errors, f"{schema.name}({arguments}): {errors}"


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "integer", "minimum": 60},
        {"type": "integer", "maximum": -20},
        {"type": "number", "minimum": 100, "maximum": 200},
        {"type": "string", "enum": ["x", "y"]},
        {"type": ["string", "null"]},
        {"type": "array", "items": {"type": "integer"}},
        {"type": "boolean"},
    ],
)
def test_random_values_respect_simple_constraints(prop: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"v": prop}, "required": ["v"]}
    validator = Draft202012Validator(schema)
    rng = random.Random(1)
    for _ in range(50):
        arguments = random_arguments(schema, rng)
        assert validator.is_valid(arguments), arguments


async def test_random_agent_is_deterministic_per_seed() -> None:
    task = Task.model_validate(make_task())
    first = await _turns("random", _ctx(task, epoch=0))
    again = await _turns("random", _ctx(task, epoch=0))
    assert first == again
    assert first[-1].content is not None and not first[-1].tool_calls  # it ends with an answer
    runs = {repr(await _turns("random", _ctx(task, epoch=e))) for e in range(6)}
    assert len(runs) > 1  # other epochs draw other turns
    shifted = await _turns("random", _ctx(task, epoch=0), seed=1)
    assert shifted != first
