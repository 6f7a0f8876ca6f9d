"""``litellm:MODEL`` end to end: LiteLLM over real HTTP against the scripted server, in the
OpenAI and the Anthropic wire formats; tokens, price (LiteLLM's table where toolproof's has
no entry), the cache, retries and whose error a failure is."""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from pathlib import Path

import pytest
from adapter_support import FAST, STOCK_SUM, RawServer, run_core

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.spec import SpecError
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply
from toolproof.trajectory import Termination

if importlib.util.find_spec("litellm") is None:  # not imported here: toolproof sets it up first
    pytest.skip("needs pip install 'toolproof[litellm]'", allow_module_level=True)

PRICED = [
    ScriptedReply(tool_calls=STOCK_SUM[0].tool_calls, usage=(1000, 100)),
    ScriptedReply(tool_calls=STOCK_SUM[1].tool_calls, usage=(2000, 50)),
    ScriptedReply(STOCK_SUM[2].content, usage=(3000, 20)),
]
"""stock-sum with reported token counts."""


def options(base_url: str, **extra: object) -> dict[str, object]:
    return {"base_url": base_url, "api_key": "test", **FAST, **extra}


async def test_an_openai_wire_model_solves_a_task_with_tokens_and_litellms_price(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING), ModelServer(PRICED) as server:
        trajectory, score = await run_core("litellm:openai/gpt-4o", options(server.base_url))
        requests = server.requests
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert score.passed_loose
    assert len(requests) == 3
    assert requests[0]["model"] == "gpt-4o"  # LiteLLM's provider prefix is its own
    assert requests[0]["tools"][0]["function"]["name"] == "get_stock"
    first = trajectory.steps[0]
    assert [(c.name, c.arguments) for c in first.message.tool_calls] == [
        ("get_stock", {"product_id": "A"}),
        ("get_stock", {"product_id": "B"}),
    ]
    usages = [s.usage for s in trajectory.steps]
    assert [(u.input_tokens, u.output_tokens) for u in usages if u] == [
        (1000, 100),
        (2000, 50),
        (3000, 20),
    ]
    assert all(u is not None and not u.estimated for u in usages)
    # toolproof's table has no "openai/gpt-4o": LiteLLM's shipped one prices it
    # ($2.50 / $10 per million), and says so.
    assert [u.cost_usd for u in usages if u] == pytest.approx([0.0035, 0.0055, 0.0077])
    assert "priced from LiteLLM's price table" in caplog.text


async def test_an_anthropic_wire_model_through_litellm() -> None:
    with ModelServer(PRICED) as server:
        trajectory, score = await run_core(
            "litellm:anthropic/claude-haiku-4-5", options(server.anthropic_base_url)
        )
        paths = [r.get("max_tokens") is not None for r in server.requests]
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert score.passed_loose
    assert all(paths)  # the Messages API (max_tokens is required there): LiteLLM translated
    usages = [s.usage for s in trajectory.steps if s.usage]
    assert (usages[0].input_tokens, usages[0].output_tokens) == (1000, 100)
    assert usages[0].cost_usd == pytest.approx(0.0015)  # LiteLLM's $1 / $5 per million


async def test_toolproofs_own_price_wins(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  openai/gpt-4o: {input: 1.0, output: 1.0}\n")
    with ModelServer(PRICED) as server:
        trajectory, _ = await run_core(
            "litellm:openai/gpt-4o", options(server.base_url, prices=str(prices))
        )
    usages = [s.usage for s in trajectory.steps if s.usage]
    assert [u.cost_usd for u in usages] == pytest.approx([0.0011, 0.00205, 0.00302])


async def test_an_unpriced_model_has_no_cost() -> None:
    with ModelServer(PRICED) as server:
        trajectory, _ = await run_core("litellm:openai/my-own-finetune", options(server.base_url))
    assert all(s.usage is not None and s.usage.cost_usd is None for s in trajectory.steps)


async def test_a_replay_from_the_cache_calls_no_provider(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with ModelServer(PRICED) as server:
        given = options(server.base_url, cache=str(cache))
        recorded, score = await run_core("litellm:openai/gpt-4o", given)
        replayed, again = await run_core("litellm:openai/gpt-4o", given)
        calls = server.calls
    assert calls == 3  # the script is used up: a live request would have failed
    assert score.passed_loose and again.passed_loose
    assert replayed.usage() == recorded.usage()
    assert [s.message for s in replayed.steps] == [s.message for s in recorded.steps]
    assert len(list(cache.rglob("*.json"))) == 3


async def test_a_rate_limit_is_retried_by_toolproof() -> None:
    limited = ScriptedReply(error=ScriptedError(429, times=2, retry_after=0.001))
    with ModelServer([limited, *STOCK_SUM]) as server:
        trajectory, score = await run_core("litellm:openai/gpt-4o", options(server.base_url))
        calls = server.calls
    assert score.passed_loose, trajectory.error
    assert calls == 5


async def test_server_errors_outliving_the_retries_are_an_infra_error() -> None:
    broken = ScriptedReply(error=ScriptedError(500, times=99, message="upstream exploded"))
    with ModelServer([broken]) as server:
        trajectory, _ = await run_core(
            "litellm:openai/gpt-4o", options(server.base_url, max_retries=1)
        )
        calls = server.calls
    assert trajectory.termination is Termination.INFRA_ERROR
    assert calls == 2
    assert "upstream exploded" in (trajectory.error or "")


async def test_a_rejected_request_is_the_agents_error_and_not_retried() -> None:
    rejected = ScriptedReply(error=ScriptedError(400, message="context too long"))
    with ModelServer([rejected]) as server:
        trajectory, _ = await run_core("litellm:openai/gpt-4o", options(server.base_url))
        calls = server.calls
    assert trajectory.termination is Termination.AGENT_ERROR
    assert calls == 1


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 1, "total_tokens": -4},
        {"prompt_tokens": 10**30, "completion_tokens": 1, "total_tokens": 10**30},
    ],
)
async def test_hostile_token_counts_are_the_agents_error(usage: dict[str, int]) -> None:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }
    raw = RawServer([(200, json.dumps(body), "application/json")])
    with raw.running():
        base = raw.url.removesuffix("/act")
        trajectory, _ = await run_core("litellm:openai/gpt-4o", options(base))
    assert trajectory.termination is Termination.AGENT_ERROR
    assert "usage.prompt_tokens must be from 0" in (trajectory.error or "")


def test_spec_errors_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match="need a model"):
        build_agent(parse_agent_spec("litellm", {}))
    with pytest.raises(SpecError, match="stream"):
        build_agent(parse_agent_spec("litellm:openai/gpt-4o", {"stream": True}))
    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[litellm\]'"):
        build_agent(parse_agent_spec("litellm:openai/gpt-4o", {}))
