"""The SDK adapters (openai, anthropic) refuse a response body past the cap, while it streams.

A real loopback server sends 50 MB; the SDK's transport stops at the limit and the episode
ends as an ``agent_error`` naming it, after one request (no retries).
"""

from __future__ import annotations

import pytest
from adapter_support import FAST, FIFTY_MB, FloodServer, run_core

from toolproof.agents.adapters._http import MAX_RESPONSE_BYTES
from toolproof.trajectory import Termination

pytest.importorskip("openai")
pytest.importorskip("anthropic")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("declare", [False, True], ids=["streamed", "declared"])
async def test_a_50_mb_model_response_is_an_agent_error(provider: str, declare: bool) -> None:
    with FloodServer(declare=declare).running() as server:
        base = server.url.removesuffix("/act")
        base_url = f"{base}/v1" if provider == "openai" else base
        options = {**FAST, "base_url": base_url, "api_key": "test", "max_retries": 2}
        trajectory, _ = await run_core(f"{provider}:test-model", options)
        assert server.done.wait(30)
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    error = trajectory.error or ""
    assert f"over the limit of {MAX_RESPONSE_BYTES:,} bytes" in error, error
    if declare:
        assert f"{FIFTY_MB + 20:,} bytes (its content-length)" in error
    assert server.requests == 1  # refused, not retried
    assert server.sent < FIFTY_MB * 0.8, server.sent
