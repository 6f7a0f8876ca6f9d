"""Which :class:`~toolproof.agents.AgentInfraError`\\ s toolproof itself observed.

An episode is an infra error (retried, kept out of the score) only when the harness or
the model gateway saw the outage: a provider's 5xx, a connection failure or rate limit
that outlived the retries of toolproof's own adapters or of the gateway, the command
sandbox failing to start. Those components make their error with :func:`observed_outage`,
which remembers that very object. An ``AgentInfraError`` that agent code made itself (or
an SDK connection error it let escape) is not one of them: the episode is the agent's
``agent_error`` and counts as a failure (docs/metrics.md, "Infra errors need a witness").

Objects are told apart by identity (``id`` and ``is``, never ``==`` or ``hash``, which an
agent's subclass could redefine), held weakly so that none outlives its episode, and each
counts once: the engine takes it (:func:`take_observed_outage`) when it ends an episode on
it, so an agent that kept one cannot raise it again in a later episode or retry.
"""

from __future__ import annotations

import threading
import weakref

from .base import AgentInfraError

UNOBSERVED = (
    "no outage toolproof observed: an AgentInfraError raised by the agent's own code is "
    "its failure; route model calls through the model gateway for outages to count as infra"
)
"""Said of an agent's own ``AgentInfraError`` where the episode is scored ``agent_error``."""

_observed: weakref.WeakValueDictionary[int, AgentInfraError] = weakref.WeakValueDictionary()
_lock = threading.Lock()


def observed_outage(message: str) -> AgentInfraError:
    """An ``AgentInfraError`` for an outage toolproof's own code observed (raise it)."""
    error = AgentInfraError(message)
    with _lock:
        _observed[id(error)] = error
    return error


def is_observed_outage(exc: BaseException) -> bool:
    """True when ``exc`` is an error :func:`observed_outage` made (the very object)."""
    with _lock:
        return _observed.get(id(exc)) is exc


def take_observed_outage(exc: BaseException) -> bool:
    """Like :func:`is_observed_outage`, and forget ``exc``: it ends one episode only."""
    with _lock:
        if _observed.get(id(exc)) is not exc:
            return False
        del _observed[id(exc)]
        return True
