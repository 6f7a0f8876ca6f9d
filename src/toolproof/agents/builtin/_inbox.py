"""Replies from agents' threads to the harness's loop: one wake-up for many.

Each ``python:`` agent runs on a thread and loop of its own (``_own_thread``), and each of
its replies (what an ``act()`` or ``run()`` returned or raised) must get back to the
harness's loop. ``loop.call_soon_threadsafe`` per reply writes a byte to the loop's
self-pipe each time: a system call on the agent's thread, a wake-up of the harness's loop
and a read of the pipe there, some 8,000 of each in a 2,000-episode run. At hundreds of
episodes in flight the harness's loop is busy most of the time, and many replies come
while it is: an :class:`Inbox` queues them, only the first since the queue was last
emptied wakes the loop, and that one callback delivers all of them in the order they
came (so one episode's replies, which come one at a time, stay in order).

An inbox changes no isolation: a reply is delivered on the harness's loop exactly as
``call_soon_threadsafe`` would have, by a callback of the harness's own code; an agent
that never replies or blocks its thread delays nothing else.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

_Delivery = tuple[Callable[[Any], object], Any]


class Inbox:
    """A queue of deliveries into one event loop, woken once per batch.

    :meth:`put` may be called from any thread; the deliveries run on the loop, in the
    order they were put.
    """

    __slots__ = ("__weakref__", "_items", "_lock", "_loop", "_waking")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)  # the loop's registry holds the inbox: no cycle
        self._items: deque[_Delivery] = deque()
        self._lock = threading.Lock()
        self._waking = False

    def put(self, deliver: Callable[[Any], object], value: Any) -> None:
        """Have ``deliver(value)`` called on the loop soon (``deliver`` must not raise).

        Raises:
            RuntimeError: the loop is closed or gone (nothing will deliver it).
        """
        with self._lock:
            self._items.append((deliver, value))
            if self._waking:  # a wake-up is on its way: it delivers this one too
                return
            self._waking = True
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the event loop is gone")
            loop.call_soon_threadsafe(self._drain)
        except BaseException:
            with self._lock:
                self._waking = False
                self._items.clear()  # no loop will run them
            raise

    def _drain(self) -> None:
        """On the loop: deliver what is queued; what comes meanwhile wakes it again."""
        with self._lock:
            self._waking = False
            items, self._items = self._items, deque()
        for deliver, value in items:
            deliver(value)


_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Inbox] = weakref.WeakKeyDictionary()
_made = threading.Lock()


def inbox_of(loop: asyncio.AbstractEventLoop) -> Inbox:
    """The inbox of ``loop``, made at first use (one per loop, whichever thread asks)."""
    inbox = _inboxes.get(loop)
    if inbox is None:
        with _made:
            inbox = _inboxes.get(loop)
            if inbox is None:
                inbox = _inboxes[loop] = Inbox(loop)
    return inbox
