"""The gateway's connections: a global cap that idle connections cannot use up.

Every episode of a process reaches the one gateway on loopback, so a connection says
nothing about whose it is until its request arrives. uvicorn's own cap
(``limit_concurrency``) answers 503 to every request once that many connections are open,
so one agent holding a thousand idle connections would fail every other episode's calls.
Here, instead:

* a connection that sends no request within ``idle_timeout_s`` is closed (as uvicorn
  closes a keep-alive connection idle after a response);
* past ``max_connections``, a new connection makes room by closing the oldest *idle* one
  (no request in flight, a partly sent request head included), so a flood of idle
  connections only ever evicts itself; only when every open connection is serving a
  request is the new one closed. Requests in flight are bounded per episode by the
  gateway (``max_in_flight``), so no one episode can hold all of them.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


def _idle(protocol: Any) -> bool:
    cycle = getattr(protocol, "cycle", None)
    return cycle is None or bool(cycle.response_complete)


def fair_protocol(max_connections: int, idle_timeout_s: float) -> type[H11Protocol]:
    """An h11 protocol class for uvicorn (``Config(http=...)``) with the module's rules.

    Args:
        max_connections: Connections open at once, across every client.
        idle_timeout_s: Seconds a new connection may wait before its first request.
    """
    born = itertools.count()

    class FairH11Protocol(H11Protocol):
        """uvicorn's h11 protocol; idle connections make room, fresh ones time out."""

        order: int = 0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self.order = next(born)
            super().connection_made(transport)
            self._make_room()
            if not transport.is_closing():  # no request yet: closed if none comes in time
                self._unset_keepalive_if_required()
                self.timeout_keep_alive_task = self.loop.call_later(
                    idle_timeout_s, self.timeout_keep_alive_handler
                )

        def _make_room(self) -> None:
            open_ = [p for p in self.connections if not p.transport.is_closing()]
            excess = len(open_) - max_connections
            if excess <= 0:
                return
            idle = sorted(
                (p for p in open_ if p is not self and _idle(p)),
                key=lambda p: getattr(p, "order", 0),
            )
            for victim in idle[:excess]:
                victim.transport.close()
            if excess > len(idle):  # every other connection is serving a request
                self.transport.close()

    return FairH11Protocol
