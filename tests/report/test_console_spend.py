"""The console's spend line and version label (what `run` and `show` print)."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.report.console import agent_spend, version_label


@pytest.mark.parametrize(
    ("version", "shown"),
    [("3.0.0", "v3.0.0"), ("bfcl-eval-2026.3.23", "bfcl-eval-2026.3.23"), ("", ""), (None, "None")],
)
def test_a_version_gets_one_v_at_most(version: Any, shown: str) -> None:
    assert version_label(version) == shown


def _summary(cost: dict[str, Any], finished: int = 4) -> dict[str, Any]:
    tokens = {"input": 300, "output": 100, "total": 400, "estimated": False}
    return {"episodes": {"finished": finished}, "tokens": tokens, "cost": cost}


def test_priced_unpriced_partial_and_no_usage() -> None:
    priced = agent_spend(_summary({"status": "priced", "usd": 0.02}))
    assert priced == "tokens 300 in + 100 out (100 per episode); cost $0.0200 ($0.0050 per episode)"
    assert "cost unknown (unpriced model)" in agent_spend(_summary({"status": "unpriced"}))
    partial = agent_spend(_summary({"status": "partial", "usd": 0.01, "unpriced_episodes": 2}))
    assert "2 unpriced episode(s) not counted" in partial
    assert "cost $0 (no model usage)" in agent_spend(_summary({"status": "no_usage"}))
    assert "per episode" not in agent_spend(_summary({"status": "no_usage"}, finished=0))
    assert agent_spend({}) == "tokens 0 in + 0 out; cost $0 (no model usage)"
