"""Tool schemas are handed to every episode's agent as its own copy (issue #15's lean path).

The engine copies schemas cheaply (``agents.base.copy_schema``, ``engine/_copies.py``:
once per episode, not every turn); an agent that edits what it is given must still
change nothing for the gateway, the record or any other episode.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import vandal_agents

from toolproof.agents.base import copy_schema
from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.spec import resolve_suite_path
from toolproof.trajectory import ToolKind, ToolSchema


def test_a_copied_schema_is_equal_and_independent() -> None:
    schema = ToolSchema(
        name="t", description="d", parameters={"type": "object", "properties": {"x": {}}}
    )
    copy = copy_schema(schema)
    assert copy == schema and copy.model_fields_set == schema.model_fields_set
    assert copy.model_dump_json(exclude_unset=True) == schema.model_dump_json(exclude_unset=True)
    copy.parameters["properties"]["x"]["type"] = "string"
    assert schema.parameters == {"type": "object", "properties": {"x": {}}}
    odd = ToolSchema(name="t", description="d", parameters={"x": {1, 2}}, kind=ToolKind.WRITE)
    assert copy_schema(odd) == odd and copy_schema(odd).parameters["x"] is not odd.parameters["x"]


def test_an_agent_vandalising_its_schemas_touches_no_other_episode(tmp_path: Path) -> None:
    vandal_agents.SEEN.clear()
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent="python:vandal_agents:Vandal",
        epochs=3,
        tasks=["stock-sum"],
    )
    asyncio.run(Runner(config, tmp_path / "run", parallel=1).run())
    handed = [s["ctx"] for s in vandal_agents.SEEN if "ctx" in s]
    steps = [s["step"] for s in vandal_agents.SEEN if "step" in s]
    assert len(handed) == 3 and len(steps) == 6
    assert all(tools == handed[0] for tools in handed)  # every episode: the pristine schemas
    firsts = steps[::2]  # parallel=1: each episode's two turns in order
    assert all(tools == handed[0] for tools in firsts)  # each episode's first turn too
    assert not any("vandal" in str(tools) for tools in handed + firsts)
    # its second turn shows its own edits of its copies (its notes), never another's
    records = list(RunReader(tmp_path / "run").records())
    assert len(records) == 3
    for record in records:  # the gateway kept validating against its own schemas
        result = record.trajectory.steps[0].results[0]
        assert not result.is_error, result.content
