"""Usage in every provider shape, and hostile shapes that must count as nothing."""

from __future__ import annotations

import json

import pytest

from toolproof.agents.adapters._cost import Price, PriceTable
from toolproof.gateway import Counted, json_usage, stream_usage


def sse(*events: object) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def test_openai_usage_with_cached_prompt_tokens() -> None:
    body = {
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 800},
        }
    }
    assert json_usage("openai", body) == Counted(1000, 50, 800)


def test_anthropic_usage_counts_cache_reads_and_writes_as_input() -> None:
    body = {
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 90,
        }
    }
    assert json_usage("anthropic", body) == Counted(1000, 5, 900)


def test_streams_of_both_providers() -> None:
    openai_stream = sse(
        {"choices": [{"delta": {"content": "hi"}}]},
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}},
    )
    assert stream_usage("openai", openai_stream) == Counted(7, 2, 0)
    anthropic_stream = sse(
        {"type": "message_start", "message": {"usage": {"input_tokens": 9, "output_tokens": 1}}},
        {"type": "content_block_delta", "delta": {"text": "x"}},
        {"type": "message_delta", "usage": {"output_tokens": 6}},
    )
    assert stream_usage("anthropic", anthropic_stream) == Counted(9, 6, 0)


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {"usage": None},
        {"usage": "lots"},
        {"usage": {"prompt_tokens": "10", "completion_tokens": None}},
        {"usage": {"prompt_tokens": True, "completion_tokens": False}},
    ],
)
def test_garbage_usage_is_no_usage(body: object) -> None:
    assert json_usage("openai", body) is None


def test_negative_or_odd_counts_are_zero_not_negative_cost() -> None:
    counted = json_usage("openai", {"usage": {"prompt_tokens": -5, "completion_tokens": 3}})
    assert counted == Counted(0, 3, 0)
    assert stream_usage("openai", "data: {not json\n\ndata: [1,2]\n\n: comment\n") is None


def test_cached_input_tokens_are_priced_at_the_cached_rate() -> None:
    table = PriceTable({"m": Price(input=2.0, output=8.0, cached_input=0.5)})
    usage = table.usage("m", 1000, 100, cached_input_tokens=800)
    assert usage.cost_usd == pytest.approx((200 * 2.0 + 800 * 0.5 + 100 * 8.0) / 1e6)
    plain = PriceTable({"m": Price(input=2.0, output=8.0)}).usage(
        "m", 1000, 100, cached_input_tokens=800
    )
    assert plain.cost_usd == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1e6)
    assert table.usage("m", 10, 1, cached_input_tokens=999).cost_usd == pytest.approx(
        (10 * 0.5 + 1 * 8.0) / 1e6
    )
