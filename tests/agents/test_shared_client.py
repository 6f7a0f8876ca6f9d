"""One SDK client (one connection pool) per run, shared by its episodes, closed by the last."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from adapter_support import STOCK_SUM, core_instance, provider_options

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters._shared_client import SharedClient
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.testing import ModelServer, sequence_policy


class _Fake:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


async def test_users_share_one_client_and_the_last_closes_it() -> None:
    shared: SharedClient[_Fake] = SharedClient(_Fake)
    a, b = shared.acquire(), shared.acquire()
    assert a is b and shared.made == 1
    await shared.release(a)
    assert not a.closed
    await shared.release(b)
    assert a.closed
    c = shared.acquire()  # after the last release: a fresh one
    assert c is not a and shared.made == 2
    await shared.release(c)


async def test_one_client_serves_at_most_per_client_users_at_once() -> None:
    shared: SharedClient[_Fake] = SharedClient(_Fake, per_client=2)
    held = [shared.acquire() for _ in range(5)]
    assert shared.made == 3 and held[0] is held[1] and held[2] is held[3] is not held[0]
    await shared.release(held[0])
    again = shared.acquire()  # the room left in the first client is used again
    assert again is held[0] and shared.made == 3
    for client in [again, *held[1:]]:
        await shared.release(client)
    assert all(client.closed for client in held)


def test_a_new_event_loop_gets_its_own_client() -> None:
    shared: SharedClient[_Fake] = SharedClient(_Fake)
    first = asyncio.run(_hold(shared))
    second = asyncio.run(_hold(shared))
    assert first is not second and shared.made == 2
    assert not first.closed  # released in a later loop: closed there
    asyncio.run(shared.release(first))
    assert first.closed


async def _hold(shared: SharedClient[_Fake]) -> _Fake:
    return shared.acquire()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_concurrent_episodes_of_a_run_use_one_client(provider: str) -> None:
    spec = f"{provider}:model-x"
    agents: list[Any] = []
    with ModelServer(sequence_policy(STOCK_SUM, per_conversation=True)) as server:
        factory = build_agent(parse_agent_spec(spec, provider_options(server, provider)))

        def spy(ctx: Any) -> Any:
            agent = factory(ctx)
            agents.append(agent)
            return agent

        outcomes = await asyncio.gather(
            *(
                run_episode(core_instance(epoch=e), spy, EpisodeOptions(agent_label=spec))
                for e in range(3)
            )
        )
    assert all(score.passed_loose for _, score in outcomes)
    shared = {id(agent._shared) for agent in agents}
    assert len(agents) == 3 and len(shared) == 1
    assert agents[0]._shared.made == 1  # the episodes overlapped: one client for all three
    assert all(agent._client is None for agent in agents)  # each gave it back
