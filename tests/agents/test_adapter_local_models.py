"""Local and LiteLLM models end to end, harness-driven and through the model gateway.

* ``ollama:MODEL`` / ``vllm:MODEL``: the OpenAI-compatible adapter on the servers' usual
  local ports; tokens recorded, $0 a token, replayed from the cache.
* An agent that owns its loop (the LlamaIndex example, whose model is LlamaIndex's
  ``OpenAILike`` for any name that is not OpenAI's) with ``--model ollama:...`` and
  ``--model litellm:...``: every call through toolproof's model gateway, recorded, priced
  and cached; ``litellm:`` reaches the scripted server through ``litellm.acompletion``.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import pytest
from adapter_support import FAST, mini_core, run_core

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import Suite, load_suite
from toolproof.testing import ModelServer, sequence_policy
from toolproof.trajectory import Termination
from toolproof_helpers import STOCK_SUM_PRICED

pytest.importorskip("openai")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LLAMAINDEX = "llamaindex:llamaindex_agent:make_agent"

# llama-index-workflows touches pydantic's deprecated class attributes; their warnings.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


def needs(*modules: str) -> pytest.MarkDecorator:
    missing = [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}")


@functools.cache
def core() -> Suite:
    """The core suite's config with stock-sum alone (other core tasks may be mid-edit)."""
    import tempfile

    root = mini_core(Path(tempfile.mkdtemp(prefix="toolproof-mini-core-")), ["stock-sum"])
    return load_suite(str(root))


async def run_task(agent: str, options: dict[str, Any]) -> EpisodeRecord:
    """One episode of stock-sum, as ``toolproof run`` runs it (the gateway included)."""
    config = RunConfig(
        suite=str(core().root), agent=agent, agent_options=options, tasks=["stock-sum"]
    )
    return await Worker(config, None, core()).run(EpisodeJob("stock-sum", 0))


@pytest.mark.parametrize(("kind", "port"), [("ollama", 11434), ("vllm", 8000)])
def test_the_shorthands_default_to_the_local_servers(kind: str, port: int) -> None:
    from toolproof.agents import EpisodeContext
    from toolproof.spec import Limits

    factory = build_agent(parse_agent_spec(f"{kind}:qwen2.5:7b", {}))
    ctx = EpisodeContext(
        task_id="t", suite="s", epoch=0, system_prompt="", prompt="", tools=[], limits=Limits()
    )
    made = factory(ctx)
    assert made._options.base_url == f"http://localhost:{port}/v1"  # type: ignore[attr-defined]
    moved = build_agent(parse_agent_spec(f"{kind}:m", {"base_url": "http://gpu-box:9000/v1"}))
    assert moved(ctx)._options.base_url == "http://gpu-box:9000/v1"  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["ollama", "vllm"])
async def test_a_local_model_solves_a_task_at_no_cost_and_replays(
    kind: str, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    with ModelServer(STOCK_SUM_PRICED) as server:
        options = {"base_url": server.base_url, "cache": cache, **FAST}
        trajectory, score = await run_core(f"{kind}:qwen2.5:7b", options)
        replayed, again = await run_core(f"{kind}:qwen2.5:7b", options)
        asked = [r["model"] for r in server.requests]
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert score.passed_loose and again.passed_loose
    assert asked == ["qwen2.5:7b"] * 3  # the replay asked nothing
    usage = trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (380, 42, False)
    assert usage.cost_usd == 0.0  # a local server bills nothing per token: $0, not unpriced
    assert replayed.usage() == usage


async def test_a_local_models_price_file_wins(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  qwen2.5:7b: {input: 0.1, output: 0.2}\n")
    with ModelServer(STOCK_SUM_PRICED) as server:
        options = {"base_url": server.base_url, "prices": str(prices), **FAST}
        trajectory, _ = await run_core("ollama:qwen2.5:7b", options)
    assert trajectory.usage().cost_usd == pytest.approx((380 * 0.1 + 42 * 0.2) / 1e6)


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _calls(record: EpisodeRecord) -> list[dict[str, Any]]:
    return [c for s in record.trajectory.steps for c in s.annotations.get("model_calls", [])]


@needs("llama_index.core", "llama_index.llms.openai_like")
async def test_an_agent_that_owns_its_loop_on_an_ollama_model(
    examples: None, tmp_path: Path
) -> None:
    with ModelServer(sequence_policy(STOCK_SUM_PRICED)) as server:
        options = {
            "provider": "ollama",
            "model": "qwen2.5:7b",
            "base_url": server.base_url,
            "cache": str(tmp_path / "cache"),
        }
        record = await run_task(LLAMAINDEX, options)
        asked = [r["model"] for r in server.requests]
        again = await run_task(LLAMAINDEX, options)
        calls_after = server.calls
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed_loose and again.score.passed_loose
    assert asked == ["qwen2.5:7b"] * 3  # OpenAILike sent the local name as it is
    assert calls_after == 3  # the rerun came from the gateway's cache
    usage = trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens) == (380, 42)
    assert usage.cost_usd == 0.0
    assert len(_calls(record)) == 3 and all(c["model"] == "qwen2.5:7b" for c in _calls(record))
    assert all(c["cached"] for c in _calls(again))


@needs("llama_index.core", "llama_index.llms.openai_like", "litellm")
async def test_an_agent_that_owns_its_loop_on_a_litellm_model(
    examples: None, tmp_path: Path
) -> None:
    with ModelServer(sequence_policy(STOCK_SUM_PRICED)) as server:
        options = {
            "provider": "litellm",
            "model": "openai/gpt-4o",
            "base_url": server.base_url,  # LiteLLM's api_base: the harness keeps it
            "api_key": "sk-run",
            "cache": str(tmp_path / "cache"),
        }
        record = await run_task(LLAMAINDEX, options)
        sent = server.requests
        again = await run_task(LLAMAINDEX, options)
        calls_after = server.calls
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed_loose and again.score.passed_loose
    assert [r["model"] for r in sent] == ["gpt-4o"] * 3  # LiteLLM called the provider
    assert calls_after == 3
    usage = trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens) == (380, 42)
    # toolproof's table has no "openai/gpt-4o": LiteLLM's ($2.50 / $10 per million).
    assert usage.cost_usd == pytest.approx((380 * 2.5 + 42 * 10) / 1e6)
    calls = _calls(record)
    assert len(calls) == 3 and all(c["model"] == "openai/gpt-4o" for c in calls)
    assert again.trajectory.usage() == usage


@needs("llama_index.core", "llama_index.llms.openai_like", "litellm")
async def test_a_litellm_provider_outage_through_the_gateway_is_an_infra_error(
    examples: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.agents.adapters import _via_gateway
    from toolproof.agents.adapters._retry import RetryPolicy
    from toolproof.testing import ScriptedError, ScriptedReply

    fast = functools.partial(RetryPolicy, 1, 0.001, 0.01)  # one quick retry, not four slow ones
    monkeypatch.setattr(_via_gateway, "RetryPolicy", fast)

    broken = ScriptedReply(error=ScriptedError(503, times=99, message="overloaded"))
    with ModelServer([broken]) as server:
        options = {
            "provider": "litellm",
            "model": "openai/gpt-4o",
            "base_url": server.base_url,
            "api_key": "sk-run",
        }
        record = await run_task(LLAMAINDEX, options)
        calls = server.calls
    assert record.trajectory.termination is Termination.INFRA_ERROR
    assert "503" in (record.trajectory.error or "")
    assert calls >= 2  # through LiteLLM, retried by the gateway before it gave up
