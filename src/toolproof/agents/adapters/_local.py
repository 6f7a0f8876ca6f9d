"""Local OpenAI-compatible model servers (``ollama:``, ``vllm:``): where they listen by
default, and what they cost (nothing per token, unless a price file says otherwise)."""

from __future__ import annotations

from ._cost import Price, PriceTable

LOCAL_BASE_URLS: dict[str, str] = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
}
"""Ollama's OpenAI-compatible API (``ollama serve``) and vLLM's (``vllm serve MODEL``), in
the OpenAI SDK's convention; ``--agent-arg base_url=...`` points either elsewhere."""


FREE = Price(input=0.0, output=0.0)


class LocalPrices(PriceTable):
    """The price table, and $0 for a model it does not list: a local server bills nothing
    per token (a ``prices`` file with the model's name sets your own hardware cost)."""

    def price(self, model: str) -> Price | None:
        """The listed price of ``model``, else $0."""
        return super().price(model) or FREE
