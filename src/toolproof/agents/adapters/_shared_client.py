"""One SDK client, and so one httpx connection pool, for the episodes of a run.

Making an ``AsyncOpenAI`` / ``AsyncAnthropic`` client per episode cost a new
connection (TCP, TLS) and the SDK's set-up for every episode. A factory holds one
:class:`SharedClient`; each episode's agent :meth:`~SharedClient.acquire`\\ s it when
it first calls the model (inside the event loop: a client and its connections belong
to one loop, and a new loop gets a new client) and releases it when it is closed; the
last release closes the client, so no connection outlives the episodes that use it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Generic, TypeVar

C = TypeVar("C")


class SharedClient(Generic[C]):
    """A client made on first use in a loop, counted, closed by its last user."""

    def __init__(self, make: Callable[[], C]) -> None:
        self._make = make
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._users = 0
        self.made = 0
        """Clients made so far (one per run when episodes overlap)."""

    def acquire(self) -> C:
        """The loop's client (made now when there is none); call :meth:`release` after."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop, self._users = self._make(), loop, 0
            self.made += 1
        self._users += 1
        return self._client

    async def release(self, client: C) -> None:
        """One user is done with ``client``; the last one closes it."""
        if client is not self._client:  # a client of an earlier loop
            await _close(client)
            return
        self._users -= 1
        if self._users <= 0:
            self._client, self._loop, self._users = None, None, 0
            await _close(client)


async def _close(client: Any) -> None:
    await client.close()
