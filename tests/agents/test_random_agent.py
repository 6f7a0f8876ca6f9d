"""The ``random`` agent: seen values, a turn budget that grows with the step limit, no repeats."""

from __future__ import annotations

import json
import random
from typing import Any

from jsonschema import Draft202012Validator

from toolproof.agents import Observation, build_agent, make_agent, parse_agent_spec
from toolproof.agents.builtin.random_agent import (
    MAX_SEEN,
    RandomAgent,
    Seen,
    random_arguments,
    turn_budget,
)
from toolproof.spec import Limits, Task, render
from toolproof.tools import load_builtin, registry, resolve_tools
from toolproof.trajectory import Message, ToolSchema
from toolproof_helpers import make_task

ARCHIVE = ToolSchema(
    name="archive_email",
    description="Archive a message.",
    parameters={
        "type": "object",
        "properties": {"email_id": {"type": "string"}, "note": {"type": "string"}},
        "required": ["email_id"],
    },
)


def _result(content: Any) -> Message:
    text = content if isinstance(content, str) else json.dumps(content)
    return Message(role="tool", content=text, tool_call_id="c", name="list_emails")


async def _play(agent: RandomAgent, results: list[Message], steps: int) -> list[dict[str, Any]]:
    """Every call's arguments over ``steps`` turns, each turn seeing ``results`` last."""
    made = []
    for step in range(steps):
        turn = await agent.act(Observation(messages=results, tools=[ARCHIVE], step=step))
        made += [c.arguments for c in turn.tool_calls]
    return made


async def test_values_seen_under_the_arguments_name_are_reused() -> None:
    listing = [{"email_id": f"M{i}", "subject": f"Lunch {i}"} for i in range(10)]
    agent = RandomAgent(3, [ARCHIVE], max_turns=40)
    made = await _play(agent, [_result(listing)], 40)
    ids = [a["email_id"] for a in made]
    seen_ids = [i for i in ids if i.startswith("M")]
    assert len(set(seen_ids)) > 3
    # the ids are seen under the argument's own name: they win over other seen strings
    assert len(seen_ids) > len(ids) / 2
    assert not any(i.startswith("Lunch") for i in ids)


async def test_the_prompt_and_plain_text_results_are_seen_too() -> None:
    agent = RandomAgent(5, [ARCHIVE], max_turns=40, prompt="Archive the note from Q-17, please.")
    made = await _play(agent, [_result("id,owner\nZ-42,ops\n")], 40)
    ids = {a["email_id"] for a in made}
    assert "Q-17" in ids and "Z-42" in ids


async def test_it_never_repeats_a_call_while_another_is_possible() -> None:
    listing = [{"email_id": f"M{i}"} for i in range(30)]
    agent = RandomAgent(11, [ARCHIVE], max_turns=30)
    made = await _play(agent, [_result(listing)], 30)
    keys = [json.dumps(a, sort_keys=True) for a in made]
    assert len(keys) == len(set(keys))


def test_the_turn_budget_grows_with_the_step_limit() -> None:
    assert turn_budget(20) == 5  # a core task: about as before (at most 4 turns)
    assert turn_budget(80) == 20
    assert turn_budget(8) == 4
    assert turn_budget(3) == 2  # one turn is left for the answer
    assert turn_budget(1) == 1
    assert turn_budget(80, share=0.5) == 40


async def test_the_budget_comes_from_the_tasks_limit_unless_fixed() -> None:
    task = Task.model_validate(make_task())
    schemas = [t.schema for t in resolve_tools(task)]

    async def turns(max_steps: int, **options: Any) -> int:
        longest = 0
        for epoch in range(8):
            instance = render(
                task,
                suite="mini",
                suite_seed=1,
                epoch=epoch,
                limits=Limits(max_steps=max_steps),
                system_prompt="s",
            )
            agent = make_agent(build_agent(parse_agent_spec("random", options)), instance, schemas)
            for step in range(max_steps):
                turn = await agent.act(Observation(messages=[], tools=schemas, step=step))  # type: ignore[union-attr]
                if not turn.tool_calls:
                    longest = max(longest, step)
                    break
        return longest

    assert await turns(80) > 4  # a long task gets a longer walk
    assert await turns(80) <= 20
    assert await turns(80, max_turns=3) <= 3


def test_hostile_results_are_bounded_and_harmless() -> None:
    seen = Seen()
    seen.add_text(json.dumps([{"k": i} for i in range(20_000)]))  # a huge listing
    seen.add_text("[" * 100_000 + '"deep"' + "]" * 100_000)  # nested past the parser's stack
    seen.add_text('{"a": [1, 2')  # broken JSON: read as text
    seen.add_text("\x00\xff" * 10_000 + "{not json")
    assert len(seen.values) + sum(len(v) for v in seen.by_key.values()) <= MAX_SEEN
    fresh = Seen()
    fresh.add_text(json.dumps({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": "x"}}}}}}}}}))
    assert "x" not in fresh.values  # beyond 8 levels nothing is kept
    fresh.add_text(json.dumps({"flag": True, "none": None, "n": 7}))
    assert fresh.values == [7]  # booleans and nulls are not values to pass on


def test_arguments_from_seen_values_stay_schema_valid_for_every_builtin_tool() -> None:
    load_builtin()
    seen = Seen()
    seen.add_text(
        json.dumps(
            {
                "email_id": "M1",
                "path": "/workspace/a.txt",
                "amount": -12.5,
                "count": 10**12,
                "id": "",
                "folder": "nowhere",
                "x": "y" * 5000,
                "days": 3,
            }
        )
    )
    seen.add_text("free text with words, 42 and /workspace/b.csv")
    for tool in registry().values():  # which tools: what the worker's earlier tests loaded
        rng = random.Random(tool.schema.name)  # each tool's draws, whatever the order
        schema = tool.schema.parameters
        if '"pattern"' in json.dumps(schema):
            continue  # regular expressions are beyond a random agent (a known limitation)
        validator = Draft202012Validator(schema)
        for _ in range(20):
            arguments = random_arguments(schema, rng, seen=seen)
            errors = [e.message for e in validator.iter_errors(arguments)]
            assert not errors, f"{tool.schema.name}({arguments}): {errors}"


def test_a_seen_value_is_offered_only_where_a_choice_of_schemas_allows_it() -> None:
    # AgentDojo's tools (registered when its suite loads) take e.g. `amount: number | null`
    # as an anyOf with no `type`: a seen word is not a number, whatever the registry's order.
    seen = Seen()
    seen.add_text('{"amount": "with", "note": "with", "count": 3}')
    schema = {
        "type": "object",
        "properties": {
            "amount": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "count": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        },
        "required": ["amount", "note"],
    }
    assert "with" in seen.candidates("note", schema["properties"]["note"])
    assert seen.candidates("amount", schema["properties"]["amount"]) == [3]  # a number, not "with"
    assert seen.candidates("count", schema["properties"]["count"]) == []  # 3 is both: invalid
    del schema["properties"]["count"]  # random_value does not draw for a oneOf
    validator = Draft202012Validator(schema)
    rng = random.Random(7)
    for _ in range(200):
        arguments = random_arguments(schema, rng, seen=seen)
        assert not list(validator.iter_errors(arguments)), arguments


def test_a_local_ref_is_followed_and_a_hostile_one_is_bounded() -> None:
    # pydantic writes an enum as a $ref into $defs (AgentDojo's share_file); a recursive ref
    # that fans out (an MCP server's schema, say) must not build an endless tree.
    enum = {
        "$defs": {"Permission": {"enum": ["r", "rw"], "type": "string"}},
        "type": "object",
        "properties": {"permission": {"$ref": "#/$defs/Permission", "description": "level"}},
        "required": ["permission"],
    }
    rng = random.Random(3)
    seen = Seen()
    seen.add_text("with words")
    assert {random_arguments(enum, rng, seen=seen)["permission"] for _ in range(50)} == {"r", "rw"}
    fan = {"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}] * 200}}}
    hostile = {**fan, "type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}}
    dangling = {"$defs": {}, "type": "object", "properties": {"y": {"$ref": "#/$defs/Nope"}}}
    for schema in (hostile, dangling):
        arguments = random_arguments({**schema, "required": list(schema["properties"])}, rng)
        assert set(arguments) == set(schema["properties"])  # some value, drawn at once
