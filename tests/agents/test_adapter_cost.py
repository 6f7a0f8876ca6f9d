"""Token counts, the shipped price table, user price files, unpriced models."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters._cost import PriceTable, estimate_tokens
from toolproof.spec import SpecError


def test_the_shipped_table_prices_known_models_and_their_snapshots() -> None:
    table = PriceTable.load()
    gpt = table.price("gpt-4o")
    assert gpt is not None and (gpt.input, gpt.output) == (2.5, 10.0)
    assert table.price("gpt-4o-2024-08-06") == gpt
    assert table.price("gpt-4o-mini-2024-07-18") == table.price("gpt-4o-mini") != gpt
    assert table.price("claude-haiku-4-5-20251001") == table.price("claude-haiku-4-5")
    assert table.price("claude-3-7-sonnet-latest") == table.price("claude-3-7-sonnet")
    # Only dated snapshots inherit a price: a variant with another price needs its own entry.
    assert table.price("o3-pro") is None
    assert table.price("my-finetune") is None


def test_usage_from_the_provider_is_priced() -> None:
    usage = PriceTable.load().usage("gpt-4o", 1_000_000, 100_000)
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (1_000_000, 100_000, False)
    assert usage.cost_usd == pytest.approx(2.5 + 1.0)


def test_missing_counts_are_estimated_and_flagged() -> None:
    usage = PriceTable.load().usage("gpt-4o", None, None, input_chars=400, output_chars=41)
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (100, 11, True)
    assert usage.cost_usd == pytest.approx((100 * 2.5 + 11 * 10) / 1e6)
    assert estimate_tokens(0) == 0 and estimate_tokens(1) == 1


def test_an_unpriced_model_costs_none_not_zero() -> None:
    usage = PriceTable.load().usage("local-llama", 10, 5)
    assert usage.cost_usd is None
    assert (usage + usage).cost_usd is None


def test_user_files_extend_and_override(tmp_path: Path) -> None:
    mine = tmp_path / "prices.yaml"
    mine.write_text(
        "models:\n  local-llama: {input: 0, output: 0}\n  gpt-4o: {input: 1, output: 2}\n"
    )
    table = PriceTable.load([mine])
    llama = table.price("local-llama")
    assert llama is not None and llama.cost(10**6, 10**6) == 0.0
    assert table.usage("local-llama", 10, 5).cost_usd == 0.0
    gpt = table.price("gpt-4o")
    assert gpt is not None and (gpt.input, gpt.output) == (1.0, 2.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("models:\n  m: {input: -1, output: 1}\n", "models.m.input: Input should be greater"),
        ("models:\n  m: {input: 1}\n", "models.m.output: Field required"),
        ("models: [1, 2\n", "is not valid YAML"),
        ("model:\n  m: {input: 1, output: 1}\n", "model: Extra inputs are not permitted"),
    ],
)
def test_bad_price_files_name_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=r"bad\.yaml") as info:
        PriceTable.load([path])
    assert message in str(info.value)


def test_the_prices_option_is_checked_when_the_agent_is_built(tmp_path: Path) -> None:
    options = {"api_key": "k", "prices": str(tmp_path / "missing.yaml")}
    with pytest.raises(SpecError, match="cannot read the price file"):
        build_agent(parse_agent_spec("openai:gpt-4o", options))
