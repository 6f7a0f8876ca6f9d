"""SDK clients, and so httpx connection pools, shared by the episodes of a run.

Making an ``AsyncOpenAI`` / ``AsyncAnthropic`` client per episode cost a new
connection (TCP, TLS) and the SDK's set-up for every episode. A factory holds one
:class:`SharedClient`; each episode's agent :meth:`~SharedClient.acquire`\\ s a client
when it first calls the model (inside the event loop: a client and its connections
belong to one loop, and a new loop gets new clients) and releases it when it is closed;
a client's last release closes it, so no connection outlives the episodes that use it.

One client serves at most :data:`PER_CLIENT` episodes at once. httpcore's connection
pool looks over all its connections and waiting requests on every request, so one pool
for 500 episodes in flight spent 80% of the run's CPU there (``benchmarks/README.md``
section 2); pools of 64 keep that scan short and still share connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

C = TypeVar("C")

PER_CLIENT = 64
"""Episodes one client (one connection pool) serves at once."""


class SharedClient(Generic[C]):
    """Clients made on first use in a loop, each counted and closed by its last user."""

    def __init__(self, make: Callable[[], C], per_client: int = PER_CLIENT) -> None:
        self._make = make
        self._per_client = per_client
        self._clients: list[list[Any]] = []  # [client, users], of the current loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self.made = 0
        """Clients made so far (one per run when at most ``per_client`` episodes overlap)."""

    def acquire(self) -> C:
        """A client of this loop with room (made now when none has); :meth:`release` after."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # an earlier loop's clients close at their release
            self._clients, self._loop = [], loop
        for entry in self._clients:
            if entry[1] < self._per_client:
                entry[1] += 1
                client: C = entry[0]
                return client
        client = self._make()
        self.made += 1
        self._clients.append([client, 1])
        return client

    async def release(self, client: C) -> None:
        """One user is done with ``client``; its last one closes it."""
        for index, entry in enumerate(self._clients):
            if entry[0] is client:
                entry[1] -= 1
                if entry[1] <= 0:
                    del self._clients[index]
                    await _close(client)
                return
        await _close(client)  # a client of an earlier loop


async def _close(client: Any) -> None:
    await client.close()
