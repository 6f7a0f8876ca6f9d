"""The model-played user's spend, apart from the agent's: summary.json's ``user_model`` block.

The engine notes each call of the user model (``--user-model``) in the step where the
agent's ``ask_user`` ran (``annotations["user_model_calls"]``, see
``toolproof.engine.side_models``); here they are counted over the run.
"""

from __future__ import annotations

from typing import Any

from toolproof.results import EpisodeRecord

from ._aggregate import _r


class SideUsage:
    """Calls, tokens and cost of the model-played user (``user_model_calls`` step notes)."""

    def __init__(self) -> None:
        self.calls = self.cached = self.input_tokens = self.output_tokens = self.unpriced = 0
        self.cost_usd = 0.0

    def add(self, record: EpisodeRecord) -> None:
        """Count the user model's calls of one episode."""
        for step in record.trajectory.steps:
            for call in step.annotations.get("user_model_calls", ()):
                usage = call.get("usage") or {}
                self.calls += 1
                self.cached += bool(call.get("cached"))
                self.input_tokens += int(usage.get("input_tokens") or 0)
                self.output_tokens += int(usage.get("output_tokens") or 0)
                if usage.get("cost_usd") is None:
                    self.unpriced += 1
                else:
                    self.cost_usd += float(usage["cost_usd"])

    def to_dict(self) -> dict[str, Any]:
        """The ``user_model`` block of summary.json (cost None when no call was priced)."""
        return {
            "calls": self.calls,
            "cached_calls": self.cached,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": None if self.unpriced == self.calls else _r(self.cost_usd),
            "unpriced_calls": self.unpriced,
        }
