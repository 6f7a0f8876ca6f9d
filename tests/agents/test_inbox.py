"""Replies from agents' threads reach the harness's loop: all, once, in order, coalesced."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolproof.agents.builtin._inbox import Inbox, inbox_of
from toolproof.agents.builtin._own_thread import _AgentLoop


def _count_wakeups(loop: asyncio.AbstractEventLoop, inbox: Inbox) -> list[int]:
    """Count the loop's call_soon_threadsafe calls that wake ``inbox`` (the loop's own
    method, wrapped on this loop instance only)."""
    wakes = [0]
    real = loop.call_soon_threadsafe

    def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(callback, "__self__", None) is inbox:
            wakes[0] += 1
        return real(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    return wakes


async def test_replies_put_while_the_loop_is_busy_wake_it_once_and_all_arrive_in_order() -> None:
    loop = asyncio.get_running_loop()
    inbox = inbox_of(loop)
    assert inbox_of(loop) is inbox
    wakes = _count_wakeups(loop, inbox)
    threads, each = 16, 50
    got: list[tuple[int, int]] = []
    all_in = threading.Barrier(threads + 1, timeout=30)

    def sender(t: int) -> None:
        for i in range(each):
            inbox.put(got.append, (t, i))
        all_in.wait()

    workers = [threading.Thread(target=sender, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    all_in.wait()  # the loop is blocked here: every reply comes while it is busy
    assert got == []
    while len(got) < threads * each:
        await asyncio.sleep(0.01)
    for w in workers:
        w.join()
    assert wakes[0] == 1
    assert sorted(got) == [(t, i) for t in range(threads) for i in range(each)]
    for t in range(threads):  # each sender's replies in the order it put them
        assert [i for s, i in got if s == t] == list(range(each))
    inbox.put(got.append, (-1, -1))  # the queue was emptied: the next reply wakes it again
    while got[-1] != (-1, -1):
        await asyncio.sleep(0.01)
    assert wakes[0] == 2


async def test_many_agents_finishing_at_once_each_get_their_own_replies_in_order() -> None:
    agents, steps = 64, 5
    loops = [_AgentLoop(f"inbox-test {n}") for n in range(agents)]
    at_once = threading.Barrier(agents, timeout=30)

    def reply(agent: int, step: int) -> tuple[int, int]:
        at_once.wait()  # every agent's call ends at the same moment
        return agent, step

    async def episode(agent: int) -> list[tuple[int, int]]:
        return [
            await loops[agent].call("act()", lambda s=step: reply(agent, s))  # type: ignore[misc]
            for step in range(steps)
        ]

    try:
        results = await asyncio.wait_for(asyncio.gather(*(episode(n) for n in range(agents))), 60)
    finally:
        for agent_loop in loops:
            agent_loop.close()
    assert results == [[(n, s) for s in range(steps)] for n in range(agents)]


def test_a_closed_loop_refuses_replies_every_time() -> None:
    loop = asyncio.new_event_loop()
    inbox = inbox_of(loop)
    loop.close()
    for _ in range(2):  # the failed wake-up is not left pending: the next one fails too
        with pytest.raises(RuntimeError):
            inbox.put(print, "never delivered")
