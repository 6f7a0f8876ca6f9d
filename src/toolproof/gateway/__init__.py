"""The model gateway: every model call of an agent that owns its loop, seen, priced and cached.

Agent-driven agents (LangChain/LangGraph, LlamaIndex, AutoGen, ``cmd:`` programs)
call their models themselves. Pointed at the gateway (their SDK's base URL), each
call goes through toolproof, which records it in the episode's trajectory, prices
it, replays it from ``--cache`` and forwards it to the real provider with the run's
key (which the agent never sees) and shared rate-limit backoff::

    agent's SDK ──HTTP──▶ ModelGateway (loopback, own thread)        _server.py
                           /e/<token>/openai/v1/chat/completions
                           /e/<token>/anthropic/v1/messages
                             │ token ─▶ EpisodeLink (epoch, sink)     _link.py
                             │ cache hit? ─▶ stored reply             Route.cache
                             └ Route.retrier ─▶ Upstream (real key)   _route.py, _forward.py
                           usage from the reply (any shape)          _usage.py
                           ─▶ ModelCall ─▶ the episode's sink (usage on the next step)

The gateway serves; it decides no scores. It sits beside ``mcp`` and ``live``
in the layer map and imports only ``trajectory``: prices, the cache and the retry
policy are hooks (:class:`Route`) that the agent adapters fill in.
"""

import sys
from typing import TYPE_CHECKING, Any

from . import _limit
from ._link import PLACEHOLDER_KEY, EpisodeLink, ModelCall, Sink, episode_urls
from ._model import ModelRef, ModelSpecError, parse_model
from ._route import (
    DEFAULT_BASE_URLS,
    Api,
    GatewayFailure,
    Pricer,
    ReplyCache,
    Retrier,
    Route,
    Send,
    Upstream,
    UpstreamReply,
    UpstreamStatus,
    send_once,
)
from ._usage import Counted, json_usage, stream_usage

if TYPE_CHECKING:
    from ._server import ModelGateway, shared

#: Imported on first use: the server (starlette, uvicorn) is not needed by a run that
#: calls no model, and importing it is a tenth of ``toolproof run``'s start-up.
_LAZY = frozenset({"ModelGateway", "shared"})


def limit_shared(max_concurrent: int | None) -> None:
    """At most ``max_concurrent`` upstream calls at once through the process's gateway.

    Set on the gateway if it was made, else kept for when it is: a run that calls no model
    sets its limit without importing the server.
    """
    _limit.shared_limit[0] = max_concurrent
    server = sys.modules.get(f"{__name__}._server")
    if server is not None:
        server.shared().max_concurrent = max_concurrent


def stop_shared() -> None:
    """Stop the process's gateway if it runs (a later :func:`shared` starts it again).

    A process that never imported the server has none to stop, and does not import it.
    """
    server = sys.modules.get(f"{__name__}._server")
    if server is not None:
        server.stop_shared()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import _server

        return getattr(_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_BASE_URLS",
    "PLACEHOLDER_KEY",
    "Api",
    "Counted",
    "EpisodeLink",
    "GatewayFailure",
    "ModelCall",
    "ModelGateway",
    "ModelRef",
    "ModelSpecError",
    "Pricer",
    "ReplyCache",
    "Retrier",
    "Route",
    "Send",
    "Sink",
    "Upstream",
    "UpstreamReply",
    "UpstreamStatus",
    "episode_urls",
    "json_usage",
    "limit_shared",
    "parse_model",
    "send_once",
    "shared",
    "stop_shared",
    "stream_usage",
]
