"""An episode is an infra error only when toolproof itself saw the outage.

Infra errors are retried and kept out of the score, so an agent that could declare its
own failure an outage could launder it. These agents try: an ``AgentInfraError`` raised
by their own code (bare, or a subclass that claims to equal anything), an SDK's
``APIConnectionError`` they make themselves. Each is an ``agent_error`` and fails. A
provider that really answers 503 through the model gateway is an infra error.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolproof.agents import AgentInfraError, AgentTurn, Observation, ToolSession
from toolproof.agents._outage import is_observed_outage, observed_outage, take_observed_outage
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import Suite, load_suite, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply
from toolproof.trajectory import Termination

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROVIDER_503 = "HTTP 503 from my provider"


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(agent: str, options: dict[str, Any] | None = None) -> EpisodeRecord:
    """One episode of core's stock-sum, as `toolproof run` would run it."""
    config = RunConfig(
        suite=str(core().root), agent=agent, agent_options=options or {}, tasks=["stock-sum"]
    )
    return await Worker(config, None, core()).run(EpisodeJob("stock-sum", 0))


def assert_agents_failure(record: EpisodeRecord, *said: str) -> None:
    trajectory = record.trajectory
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert record.score.termination is Termination.AGENT_ERROR  # scored: counts as a failure
    assert not record.score.passed
    for text in said:
        assert text in (trajectory.error or "")


class ClaimsAnOutage:
    """A harness-driven agent that calls its own failure an outage."""

    async def act(self, observation: Observation) -> AgentTurn:
        raise AgentInfraError(PROVIDER_503)


class EqualToEverything(AgentInfraError):
    """Claims to be equal to (and hash like) any error toolproof observed."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class ForgesAnOutage:
    async def act(self, observation: Observation) -> AgentTurn:
        held = observed_outage("a real one, seen by toolproof")  # noqa: F841 (kept alive)
        raise EqualToEverything(PROVIDER_503)


class FakesAConnectionError:
    """Raises the openai SDK's connection error, though it never called anything."""

    async def act(self, observation: Observation) -> AgentTurn:
        import openai

        request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
        raise openai.APIConnectionError(request=request)


class DrivenClaimsAnOutage:
    """An agent that owns its loop and calls its own failure an outage."""

    async def run(self, session: ToolSession) -> str:
        await session.call_tool("get_stock", {"product_id": "A"})
        raise AgentInfraError(PROVIDER_503)


@pytest.mark.parametrize("name", ["ClaimsAnOutage", "ForgesAnOutage", "DrivenClaimsAnOutage"])
async def test_a_python_agents_own_infra_error_is_its_failure(name: str) -> None:
    record = await run_task(f"python:{__name__}:{name}")
    assert_agents_failure(record, PROVIDER_503, "no outage toolproof observed")


async def test_a_python_agent_faking_an_sdk_connection_error_fails() -> None:
    pytest.importorskip("openai")
    record = await run_task(f"python:{__name__}:FakesAConnectionError")
    assert_agents_failure(record, "APIConnectionError")


def test_only_the_very_object_toolproof_made_is_an_observed_outage() -> None:
    real = observed_outage("seen")
    assert is_observed_outage(real)
    assert not is_observed_outage(AgentInfraError("seen"))
    assert not is_observed_outage(EqualToEverything("seen"))
    assert not is_observed_outage(RuntimeError("seen"))
    assert take_observed_outage(real) and not take_observed_outage(real)  # it counts once
    assert not is_observed_outage(real)


KEPT: list[AgentInfraError] = []


class ReplaysAnOutage:
    """Keeps the outage toolproof observed in its first episode and raises it ever after."""

    async def act(self, observation: Observation) -> AgentTurn:
        if not KEPT:
            KEPT.append(observed_outage("HTTP 503, seen by toolproof's adapter"))
        raise KEPT[0]


async def test_an_observed_outage_ends_one_episode_only() -> None:
    KEPT.clear()
    first = await run_task(f"python:{__name__}:ReplaysAnOutage")
    # the run's infra retries of that episode, and every later episode: the agent's own
    assert_agents_failure(first, "HTTP 503, seen by toolproof's adapter")
    assert first.attempts >= 2 and first.infra_errors == ["HTTP 503, seen by toolproof's adapter"]


# Framework agents: their model calls go through the gateway, which is the witness.


def raises_infra(tools: list[Any], *, system_prompt: str) -> Any:
    from langchain_core.runnables import RunnableLambda

    def fail(state: Any) -> str:
        raise AgentInfraError(PROVIDER_503)

    return RunnableLambda(fail)


def raises_connection_error(tools: list[Any], *, system_prompt: str) -> Any:
    import openai
    from langchain_core.runnables import RunnableLambda

    def fail(state: Any) -> str:
        request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
        raise openai.APIConnectionError(request=request)

    return RunnableLambda(fail)


@pytest.mark.parametrize(
    ("factory", "said"),
    [("raises_infra", PROVIDER_503), ("raises_connection_error", "APIConnectionError")],
)
async def test_a_framework_agent_with_no_failed_model_call_cannot_claim_an_outage(
    factory: str, said: str
) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("openai")
    record = await run_task(f"langchain:{__name__}:{factory}")
    assert_agents_failure(record, said)


async def test_a_provider_answering_503_through_the_gateway_is_an_infra_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    outage = [ScriptedReply(error=ScriptedError(503, retry_after=0, times=20))]
    with ModelServer(outage) as server:
        record = await run_task(
            "langchain:langgraph_agent:make_agent",
            {"base_url": server.base_url, "api_key": "k"},
        )
        # the gateway's try and four retries, in each attempt the run makes at the episode
        assert server.calls >= 5 and server.calls % 5 == 0
    trajectory = record.trajectory
    assert trajectory.termination is Termination.INFRA_ERROR, trajectory.error
    assert record.score.termination is Termination.INFRA_ERROR  # kept out of the score
    assert "503" in (trajectory.error or "")


async def mcp_claims_an_outage(task: Any) -> str:
    raise AgentInfraError(PROVIDER_503)


async def test_an_mcp_agents_own_infra_error_is_its_failure() -> None:
    pytest.importorskip("mcp")
    record = await run_task(f"mcp:{__name__}:mcp_claims_an_outage")
    assert_agents_failure(record, PROVIDER_503, "no outage toolproof observed")


async def test_the_harness_driven_adapter_seeing_503s_is_an_infra_error() -> None:
    pytest.importorskip("openai")
    outage = [ScriptedReply(error=ScriptedError(503, times=20))]
    with ModelServer(outage) as server:
        record = await run_task(
            "openai:gpt-4o-mini",
            {
                "base_url": server.base_url,
                "api_key": "k",
                "backoff_base": 0.001,
                "backoff_max": 0.01,
            },
        )
    assert record.trajectory.termination is Termination.INFRA_ERROR, record.trajectory.error
    assert "503" in (record.trajectory.error or "")
