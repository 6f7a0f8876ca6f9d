"""The framework examples on their own Anthropic client classes, through the model gateway.

``ChatAnthropic`` (LangGraph), LlamaIndex's ``Anthropic`` and AutoGen's
``AnthropicChatCompletionClient`` talk to the scripted server's Anthropic Messages
wire over real HTTP, through the episode's gateway path: every model call must be in
the trajectory with exact tokens and a price, and a ``--cache`` rerun must make no
provider call and score the same.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import Suite, load_suite, resolve_suite_path
from toolproof.testing import ModelServer, sequence_policy
from toolproof.trajectory import Termination
from toolproof_helpers import STOCK_SUM_PRICED as STOCK_SUM

# llama-index-workflows builds every agent with inspect.getmembers(), which touches
# pydantic's deprecated class attributes; the warnings are theirs (as in test_adapter_llamaindex).
pytestmark = [
    pytest.mark.filterwarnings(f"ignore:{text}:pydantic.warnings.{category}")
    for text, category in [
        ("The `__fields__` attribute is deprecated", "PydanticDeprecatedSince20"),
        ("The `__fields_set__` attribute is deprecated", "PydanticDeprecatedSince20"),
        (
            "Accessing the 'model_computed_fields' attribute on the instance is deprecated",
            "PydanticDeprecatedSince211",
        ),
        (
            "Accessing the 'model_fields' attribute on the instance is deprecated",
            "PydanticDeprecatedSince211",
        ),
    ]
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL = "claude-haiku-4-5"  # $1.00 in, $5.00 out a million tokens


def _has(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:
        return False


FRAMEWORKS = [
    pytest.param(
        "langchain:langgraph_agent:make_agent",
        marks=pytest.mark.skipif(
            not _has("langgraph", "langchain_anthropic"), reason="needs toolproof[langchain]"
        ),
        id="langgraph-ChatAnthropic",
    ),
    pytest.param(
        "llamaindex:llamaindex_agent:make_agent",
        marks=pytest.mark.skipif(
            not _has("llama_index.core", "llama_index.llms.anthropic"),
            reason="needs toolproof[llamaindex]",
        ),
        id="llamaindex-Anthropic",
    ),
    pytest.param(
        "autogen:autogen_agent:make_agent",
        marks=pytest.mark.skipif(
            not _has("autogen_agentchat", "autogen_ext.models.anthropic"),
            reason="needs toolproof[autogen]",
        ),
        id="autogen-AnthropicChatCompletionClient",
    ),
]


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(agent: str, options: dict[str, Any]) -> EpisodeRecord:
    """Run one episode of core's stock-sum, as `toolproof run` would."""
    config = RunConfig(
        suite=str(core().root), agent=agent, agent_options=options, tasks=["stock-sum"]
    )
    return await Worker(config, None, core()).run(EpisodeJob("stock-sum", 0))


def calls_of(record: EpisodeRecord) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call, _ in record.trajectory.tool_calls()]


@pytest.mark.parametrize("agent", FRAMEWORKS)
async def test_the_frameworks_anthropic_client_is_recorded_priced_and_cached(
    agent: str, tmp_path: Path
) -> None:
    options = {"provider": "anthropic", "model": MODEL, "cache": str(tmp_path / "cache")}
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        first = await run_task(agent, {**options, "base_url": server.anthropic_base_url})
        assert server.calls == 3, first.trajectory.error
        assert all(r.model == MODEL for r in server.chat_requests)
        sent = server.requests[0]
    if not agent.startswith("langchain"):  # the SDK no longer takes it: sent in the body
        assert isinstance(sent["temperature"], float), sent
    trajectory = first.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert first.score.passed_loose
    assert trajectory.final_answer == "Products A and B have 42 units in stock together."
    assert calls_of(first) == [
        ("get_stock", {"product_id": "A"}),
        ("get_stock", {"product_id": "B"}),
        ("calculate", {"expression": "15 + 27"}),
    ]
    usage = trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (380, 42, False)
    assert usage.cost_usd == pytest.approx((380 * 1.0 + 42 * 5.0) / 1e6)
    listed = [c for step in trajectory.steps for c in step.annotations.get("model_calls", [])]
    assert [(c["api"], c["model"], c["status"], c["cached"]) for c in listed] == [
        ("anthropic", MODEL, 200, False)
    ] * 3
    assert [c["usage"]["input_tokens"] for c in listed] == [100, 130, 150]
    assert [c["usage"]["output_tokens"] for c in listed] == [20, 10, 12]

    with ModelServer([]) as empty:  # nothing scripted: any provider call would fail
        again = await run_task(agent, {**options, "base_url": empty.anthropic_base_url})
        assert empty.calls == 0
    assert again.trajectory.termination is Termination.COMPLETED, again.trajectory.error
    assert again.score == first.score
    assert again.trajectory.final_answer == trajectory.final_answer
    assert again.trajectory.usage() == usage
    assert calls_of(again) == calls_of(first)
    replayed = [c for s in again.trajectory.steps for c in s.annotations.get("model_calls", [])]
    assert [c["cached"] for c in replayed] == [True] * 3


def test_mend_rebinds_only_a_union_message_param_of_a_loaded_framework_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from toolproof.agents.adapters import _anthropic_compat

    broken = types.ModuleType("broken_client")
    broken.MessageParam = dict | list  # type: ignore[attr-defined]
    fixed = types.ModuleType("fixed_client")
    fixed.MessageParam = dict  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "broken_client", broken)
    monkeypatch.setitem(sys.modules, "fixed_client", fixed)
    monkeypatch.setitem(
        _anthropic_compat.MODULES, "demo", ("broken_client", "fixed_client", "not_loaded")
    )
    monkeypatch.setattr(_anthropic_compat, "_mend_sampling", lambda: [])
    assert _anthropic_compat.mend("demo") == ["broken_client.MessageParam"]
    assert broken.MessageParam is dict and fixed.MessageParam is dict
    assert broken.MessageParam(role="user", content="hi") == {"role": "user", "content": "hi"}
    assert _anthropic_compat.mend("demo") == []  # once is enough
    assert _anthropic_compat.mend("langchain") == []  # a framework it knows nothing of
