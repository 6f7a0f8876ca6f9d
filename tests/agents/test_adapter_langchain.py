"""``langchain:module:factory``: the LangGraph example, driven by the scripted model server.

The example's own ``ChatOpenAI`` talks to the server over real HTTP; the task's
tools reach it as ``StructuredTool``s, and every call it makes must show up in
the trajectory as a recorded, gateway-checked step.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="needs pip install 'toolproof[langchain]'")
pytest.importorskip("langgraph", reason="needs pip install 'toolproof[langchain]'")
pytest.importorskip("langchain_openai", reason="needs pip install 'toolproof[langchain]'")

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters import _tools_bridge
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import SpecError, Suite, load_suite, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall, sequence_policy
from toolproof.tools import resolve_tools
from toolproof.trajectory import Termination
from toolproof_helpers import STOCK_SUM_PRICED as STOCK_SUM

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENT = "langchain:langgraph_agent:make_agent"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(agent: str, options: dict[str, Any], task: str = "stock-sum") -> EpisodeRecord:
    """Run one episode of a core task, as `toolproof run` would."""
    config = RunConfig(suite=str(core().root), agent=agent, agent_options=options, tasks=[task])
    return await Worker(config, None, core()).run(EpisodeJob(task, 0))


def calls_of(record: EpisodeRecord) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call, _ in record.trajectory.tool_calls()]


async def test_langgraph_example_completes_stock_sum() -> None:
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        record = await run_task(AGENT, {"base_url": server.base_url, "api_key": "test"})
        offered = {tool.name: tool.parameters for tool in server.chat_requests[0].tools}
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed_loose
    assert trajectory.final_answer == "Products A and B have 42 units in stock together."
    assert calls_of(record) == [
        ("get_stock", {"product_id": "A"}),
        ("get_stock", {"product_id": "B"}),
        ("calculate", {"expression": "15 + 27"}),
    ]
    assert [r.content for _, r in trajectory.tool_calls() if r is not None][-1].startswith(
        '{"expression": "15 + 27", "result": 42'
    )
    declared = resolve_tools(core().task("stock-sum"))
    assert offered == {t.schema.name: t.schema.parameters for t in declared}
    # every model call, counted and priced by the model gateway (gpt-4o-mini: $0.15/$0.60)
    assert (trajectory.usage().input_tokens, trajectory.usage().output_tokens) == (380, 42)
    assert trajectory.usage().cost_usd == pytest.approx((380 * 0.15 + 42 * 0.6) / 1e6)
    assert (trajectory.steps[0].usage.input_tokens, trajectory.steps[0].usage.output_tokens) == (
        100,
        20,
    )
    assert trajectory.steps[0].usage.cost_usd == pytest.approx((100 * 0.15 + 20 * 0.6) / 1e6)


async def test_every_model_call_is_listed_on_the_step_it_led_to() -> None:
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        record = await run_task(AGENT, {"base_url": server.base_url, "api_key": "test"})
    steps = record.trajectory.steps
    listed = [call for step in steps for call in step.annotations.get("model_calls", [])]
    assert [c["usage"]["input_tokens"] for c in listed] == [100, 130, 150]
    first = steps[0].annotations["model_calls"][0]
    assert (first["api"], first["model"], first["status"], first["cached"]) == (
        "openai",
        "gpt-4o-mini",
        200,
        False,
    )
    assert first["request_messages"] == 2 and len(first["request_sha256"]) == 64
    assert '"tool_calls"' in first["reply"] and first["latency_s"] >= 0
    assert steps[-1].annotations["model_calls"][0]["reply"].count("42 units") == 1


async def test_bad_arguments_are_answered_by_the_gateway() -> None:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("get_stock", {"product": "A"})]),
        ScriptedReply("I could not look it up."),
    ]
    with ModelServer(sequence_policy(script)) as server:
        record = await run_task(AGENT, {"base_url": server.base_url, "api_key": "test"})
        seen = server.chat_requests[1].messages
    (call, result), *_ = record.trajectory.tool_calls()
    assert call.arguments == {"product": "A"}
    assert result is not None and result.is_error and result.error_kind == "invalid_arguments"
    tool_message = next(m for m in seen if m.role == "tool")
    assert "invalid arguments" in (tool_message.content or "")
    assert not record.score.passed


@contextlib.asynccontextmanager
async def closing_factory(
    tools: list[Any], *, system_prompt: str, **options: Any
) -> AsyncIterator[Any]:
    """A factory that is an async context manager: its clean-up runs after the episode."""
    from langchain_core.runnables import RunnableLambda

    CLOSED.clear()
    names = ", ".join(tool.name for tool in tools)
    shown = {k: v for k, v in options.items() if k != "base_url"}
    yield RunnableLambda(lambda state: f"tools: {names}; system: {bool(system_prompt)}; {shown}")
    CLOSED.append(True)


CLOSED: list[bool] = []


async def test_factory_may_be_an_async_context_manager() -> None:
    record = await run_task(f"langchain:{__name__}:closing_factory", {"flavour": "x"})
    assert record.trajectory.final_answer == (
        "tools: get_stock, calculate, list_products, submit_answer; system: True; "
        "{'flavour': 'x', 'api_key': 'toolproof-gateway', 'provider': 'openai'}"
    )
    assert CLOSED == [True]


def narrow_factory(tools: list[Any], *, system_prompt: str, model: str = "m") -> Any:
    """Declares only ``model``: it must never be handed ``cache``, ``base_url`` or a key."""
    from langchain_core.runnables import RunnableLambda

    return RunnableLambda(lambda state: f"model={model}")


async def test_a_factory_gets_only_the_options_it_declares(tmp_path: Path) -> None:
    options = {"cache": str(tmp_path), "model": "gpt-4o", "api_key": "sk-secret", "prices": ""}
    record = await run_task(f"langchain:{__name__}:narrow_factory", options)
    assert record.trajectory.termination is Termination.COMPLETED, record.trajectory.error
    assert record.trajectory.final_answer == "model=gpt-4o"


def test_an_option_the_factory_does_not_declare_is_refused_at_once() -> None:
    with pytest.raises(SpecError, match=r"has no parameter 'temperature'.*declares: model"):
        build_agent(parse_agent_spec(f"langchain:{__name__}:narrow_factory", {"temperature": 0.2}))


async def test_a_cached_rerun_makes_no_model_call_and_scores_the_same(tmp_path: Path) -> None:
    options = {"cache": str(tmp_path / "cache")}
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        first = await run_task(AGENT, {**options, "base_url": server.base_url, "api_key": "k"})
        calls = server.calls
    with ModelServer([]) as empty:  # nothing scripted: any provider call would fail
        again = await run_task(AGENT, {**options, "base_url": empty.base_url, "api_key": "k"})
        assert empty.calls == 0
    assert calls == 3
    assert again.trajectory.termination is Termination.COMPLETED, again.trajectory.error
    assert again.score.passed_loose and first.score.passed_loose
    assert again.trajectory.final_answer == first.trajectory.final_answer
    assert again.trajectory.usage() == first.trajectory.usage()
    assert calls_of(again) == calls_of(first)


async def test_a_provider_outage_is_an_infra_error_not_the_agents() -> None:
    from toolproof.testing import ScriptedError

    outage = [ScriptedReply(error=ScriptedError(401, message="bad key", times=10))]
    with ModelServer(outage) as server:
        record = await run_task(AGENT, {"base_url": server.base_url, "api_key": "k"})
    assert record.trajectory.termination is Termination.INFRA_ERROR
    assert "401" in (record.trajectory.error or "")


def not_a_runnable(tools: list[Any], *, system_prompt: str) -> object:
    return object()


async def test_a_factory_returning_no_runnable_is_an_agent_error() -> None:
    record = await run_task(f"langchain:{__name__}:not_a_runnable", {})
    assert record.trajectory.termination is Termination.AGENT_ERROR
    assert "not a runnable" in (record.trajectory.error or "")


def test_spec_errors_name_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match="need a factory"):
        build_agent(parse_agent_spec("langchain"))
    with pytest.raises(SpecError, match="is not callable"):
        build_agent(parse_agent_spec(f"langchain:{__name__}:AGENT"))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        _tools_bridge.importlib.util,
        "find_spec",
        lambda name: None if name == "langchain_core" else real(name),
    )
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[langchain\]'"):
        build_agent(parse_agent_spec(AGENT))
