"""HTTP agents (``http://…``): the reference server solves core tasks; bad servers are clear."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import yaml
from adapter_support import FAST, RawServer, mini_core, results, run_core

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.spec import SpecError
from toolproof.trajectory import Termination

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "http_agent_server.py"
PROTOCOL_DOC = ROOT / "docs" / "agent-protocol.openapi.yaml"
JSON = "application/json"


def protocol_schema(name: str) -> jsonschema.Draft202012Validator:
    """A validator for one schema of the protocol document."""
    document = yaml.safe_load(PROTOCOL_DOC.read_text())
    text = json.dumps(document["components"]["schemas"])
    schemas = json.loads(text.replace("#/components/schemas/", "#/$defs/"))
    return jsonschema.Draft202012Validator({"$defs": schemas, **schemas[name]})


@pytest.fixture
def reference_agent() -> Iterator[str]:
    """The example server, started on a free port; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


async def test_the_reference_agent_solves_core_tasks(reference_agent: str, tmp_path: Path) -> None:
    tasks = ["stock-sum", "stock-lookup", "calc-expression", "order-status"]
    config = RunConfig(
        suite=str(mini_core(tmp_path / "suite", tasks)),
        agent=reference_agent,
        agent_options=dict(FAST),
        epochs=2,
    )
    await Runner(config, tmp_path / "run", parallel=2).run()
    with RunReader(tmp_path / "run") as reader:
        records = {r.key: r for r in reader.records()}
    assert len(records) == 8
    for task in tasks[:3]:
        for epoch in (0, 1):
            record = records[f"{task}#{epoch}"]
            assert record.score.passed, (record.key, record.trajectory.error)
    # stock-sum: the two lookups go out as one parallel turn.
    first = records["stock-sum#0"].trajectory.steps[0]
    assert [c.arguments for c in first.message.tool_calls] == [
        {"product_id": "A"},
        {"product_id": "B"},
    ]
    # A task outside its rules: it says so, and the episode ends as gave_up.
    assert records["order-status#0"].trajectory.termination is Termination.GAVE_UP


async def test_the_request_carries_the_transcript_tools_step_and_task() -> None:
    turns = [
        json.dumps(
            {
                "tool_calls": [{"id": "x", "name": "get_stock", "arguments": '{"product_id": '}],
                "usage": {"input_tokens": 120, "output_tokens": 8, "cost_usd": 0.25},
            }
        ),
        json.dumps({"content": "42", "usage": None}),
    ]
    with RawServer([(200, t, JSON) for t in turns]).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST))
    assert trajectory.termination is Termination.COMPLETED
    first, second = server.bodies
    assert first["protocol"] == "toolproof-agent/1"
    assert (first["step"], first["task"]) == (0, {"id": "stock-sum", "epoch": 0, "suite": "core"})
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    tool = first["tools"][0]
    assert (tool["name"], tool["kind"]) == ("get_stock", "read")
    assert tool["parameters"]["required"] == ["product_id"]
    # The malformed call comes back raw, with the gateway's error as its result.
    assert results(trajectory)[0][1] == "invalid_arguments"
    sent = second["messages"][2]["tool_calls"][0]
    assert (sent["arguments"], sent["raw_arguments"]) == ({}, '{"product_id": ')
    assert second["messages"][3]["role"] == "tool"
    usage = trajectory.steps[0].usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (120, 8, 0.25)
    assert trajectory.steps[1].usage is None
    # What toolproof sent and what it accepted are what the protocol document says.
    for body in server.bodies:
        protocol_schema("TurnRequest").validate(body)
    for turn in turns:
        protocol_schema("Turn").validate(json.loads(turn))


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ((200, "<html>hello</html>", "text/html"), "a body that is not JSON (HTTP 200, text/html)"),
        ((200, '{"tool_calls": [{"arguments": {}}]}', JSON), "tool_calls.0.name: Field required"),
        ((200, '["done"]', JSON), "JSON that is not a turn"),
        ((200, '{"protocol": "toolproof-agent/9", "content": "x"}', JSON), "toolproof-agent/9"),
        ((422, '{"error": "what?"}', JSON), "HTTP 422"),
    ],
)
async def test_garbage_is_an_agent_error_saying_what_came_back(
    response: tuple[int, str, str], message: str
) -> None:
    with RawServer([response]).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST))
        requests = len(server.bodies)
    assert trajectory.termination is Termination.AGENT_ERROR
    assert message in (trajectory.error or "")
    assert requests == 1


async def test_transient_failures_are_retried_then_count_against_the_agent() -> None:
    with RawServer([(503, "busy", "text/plain")]).running() as server:
        trajectory, _ = await run_core(server.url, {**FAST, "max_retries": 2})
        requests = len(server.bodies)
    assert requests == 3
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "HTTP 503" in (trajectory.error or "")
    assert "agent under test" in (trajectory.error or "")


async def test_a_retry_then_success_is_recorded() -> None:
    done = json.dumps({"content": "42"})
    with RawServer([(429, "slow down", "text/plain"), (200, done, JSON)]).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST))
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.steps[0].annotations == {"retries": 1}


async def test_nobody_listening_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    trajectory, _ = await run_core(f"http://127.0.0.1:{port}", {**FAST, "max_retries": 1})
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "connection failed" in (trajectory.error or "")


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("http://", {}, "is not a URL"),
        ("http://127.0.0.1:9", {"model": "x"}, "no option 'model'"),
    ],
)
def test_bad_specs(spec: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_agent(parse_agent_spec(spec, options))
