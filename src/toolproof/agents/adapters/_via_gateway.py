"""Agent-driven agents' model calls through the model gateway: the run's route, from options.

A framework or command-line agent's ``--agent-arg`` options name its provider the
way the harness-driven adapters do (``provider``, ``model``, ``base_url``,
``api_key``; ``--model PROVIDER:MODEL`` fills the first two). Here they become the
run's :class:`~toolproof.gateway.Route`: the real endpoint and key stay in the harness,
and the agent is handed its episode's gateway URL and a placeholder key instead::

    options ──split──▶ harness side: provider, base_url, api_key, cache, prices,
                                     max_model_calls, allow_other_models ─▶ Route
                                     (upstream, retries with the run's shared backoff,
                                     price table, cache, the one model it serves)
                       agent side:   model, base_url=<episode URL>, api_key=<placeholder>,
                                     provider, and the user's other options

The route serves the model the run names (``--model``, or ``--agent-arg model=``) and
refuses any other with a 400 the agent sees (its error, never ``infra_error``), unless
the run allows other models (``--allow-other-models``, the option ``allow_other_models``).
Only failures the gateway witnessed on the run's side make an episode ``infra_error``
(:func:`episode_link`; invariant 8).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolproof import gateway
from toolproof.gateway import (
    DEFAULT_BASE_URLS,
    Api,
    Counted,
    EpisodeLink,
    GatewayFailure,
    ModelCall,
    Route,
    Send,
    Upstream,
    UpstreamReply,
    UpstreamStatus,
)
from toolproof.spec import Problem, SpecError
from toolproof.trajectory import Usage

from .._outage import observed_outage
from ..base import AgentInfraError, ToolSession
from ._cache import ModelCache
from ._cost import PriceTable, prices_option
from ._local import LOCAL_BASE_URLS, LocalPrices
from ._retry import (
    AgentRequestError,
    Failure,
    RetryPolicy,
    SharedBackoff,
    call_with_retries,
    status_failure,
)

PROVIDERS: dict[str, Api] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "openai-compatible": "openai",
    "ollama": "openai",
    "vllm": "openai",
    "litellm": "openai",
}
"""Providers by name, and the wire protocol each speaks (the agent speaks OpenAI's to a
``litellm`` model: LiteLLM translates for the provider behind it)."""

HARNESS_OPTIONS = frozenset(
    {"provider", "base_url", "api_key", "cache", "prices", "max_model_calls", "allow_other_models"}
)
"""Options the harness keeps: the agent gets gateway values for ``base_url``/``api_key``."""


@dataclass(frozen=True)
class GatewayPlan:
    """One run's gateway route and what the agent is told about its model.

    Attributes:
        route: The upstream, hooks and limits.
        provider: ``openai``, ``anthropic`` or ``openai-compatible``.
        api: The wire protocol of the provider.
        model: The model name, when the run names one.
    """

    route: Route
    provider: str
    api: Api
    model: str | None


def _bad(field: str, message: str) -> SpecError:
    return SpecError([Problem(None, None, f"--agent-arg {field}", message)])


def gateway_plan(options: Mapping[str, Any], what: str) -> GatewayPlan:
    """The run's gateway route from an agent's options.

    Args:
        options: The ``--agent-arg`` options (with ``--model`` and ``--cache`` folded in).
        what: Names the agent in messages.

    Raises:
        SpecError: an unknown provider or a bad option value.
    """
    provider = options.get("provider", "openai")
    if provider not in PROVIDERS:
        raise _bad(
            "provider", f"unknown provider {provider!r}; valid: {', '.join(sorted(PROVIDERS))}"
        )
    api = PROVIDERS[provider]
    base_url = options.get("base_url") or LOCAL_BASE_URLS.get(provider) or DEFAULT_BASE_URLS[api]
    if provider == "litellm" and not options.get("base_url"):
        base_url = "https://litellm.invalid"  # not used: LiteLLM knows the provider's endpoint
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise _bad("base_url", f"must be an http(s) URL, got {base_url!r}")
    api_key = options.get("api_key")
    if api_key is not None and not isinstance(api_key, str):
        raise _bad("api_key", f"must be a string, got {type(api_key).__name__}")
    model = options.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad("model", f"must be a model name, got {model!r}")
    allow_other = options.get("allow_other_models", False)
    if type(allow_other) is not bool:
        raise _bad("allow_other_models", f"must be true or false, got {allow_other!r}")
    limit = options.get("max_model_calls")
    if limit is not None and (type(limit) is not int or limit < 1):
        raise _bad("max_model_calls", f"must be a whole number >= 1, got {limit!r}")
    prices = PriceTable.load(prices_option(options.get("prices")))
    call = None
    if provider in LOCAL_BASE_URLS:
        prices = LocalPrices(prices.prices)
    if provider == "litellm":
        prices, call = _litellm_upstream(options, prices, api_key)
    cache = options.get("cache")
    backoff = SharedBackoff()
    policy = RetryPolicy()

    def pricer(name: str, counted: Counted | None, request_chars: int, reply_chars: int) -> Usage:
        return prices.usage(
            name,
            None if counted is None else counted.input_tokens,
            None if counted is None else counted.output_tokens,
            input_chars=request_chars,
            output_chars=reply_chars,
            cached_input_tokens=0 if counted is None else counted.cached_input_tokens,
        )

    async def retrier(send: Send) -> UpstreamReply:
        try:
            reply, _ = await call_with_retries(send, _classify, policy, what, shared=backoff)
        except AgentInfraError as exc:
            raise GatewayFailure(str(exc), infra=True, reply=_reply_of(exc)) from exc
        except AgentRequestError as exc:
            raise GatewayFailure(str(exc), infra=False, reply=_reply_of(exc)) from exc
        return reply

    route = Route(
        upstreams={api: Upstream(api, base_url, api_key, call)},
        retrier=retrier,
        pricer=pricer,
        cache=ModelCache(str(cache)) if cache else None,
        max_concurrent=limit,
        model=model,
        allow_other_models=allow_other,
    )
    return GatewayPlan(route, str(provider), api, model)


def _litellm_upstream(
    options: Mapping[str, Any], prices: PriceTable, api_key: str | None
) -> tuple[PriceTable, Any]:
    """The price table (LiteLLM's where toolproof's has no entry) and the upstream call
    of a ``litellm`` provider.

    Raises:
        SpecError: LiteLLM is not installed (naming the extra).
    """
    from ._litellm import LiteLLMPrices, gateway_call, require_litellm

    require_litellm()
    given = options.get("base_url")
    call = gateway_call(str(given) if given else None, api_key, Route.timeout_s)
    return LiteLLMPrices(prices.prices), call


def _reply_of(exc: BaseException) -> UpstreamReply | None:
    cause = exc.__cause__
    return cause.reply if isinstance(cause, UpstreamStatus) else None


def _classify(exc: BaseException) -> Failure | None:
    if isinstance(exc, UpstreamStatus):
        reply = exc.reply
        return status_failure(reply.status, _message(reply.body), reply.headers)
    import httpx  # here: importing it is a tenth of the start-up of a run that calls no model

    if isinstance(exc, httpx.TimeoutException):
        return Failure("retry", f"the request timed out ({type(exc).__name__})")
    if isinstance(exc, httpx.TransportError):
        return Failure("retry", f"cannot reach the provider: {exc}")
    return None


def _message(body: str) -> str:
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return body[:200]
    inner = data.get("error", data) if isinstance(data, dict) else data
    message = inner.get("message") if isinstance(inner, dict) else None
    return str(message)[:500] if message is not None else body[:200]


def agent_options(
    plan: GatewayPlan, urls: Mapping[str, str], options: Mapping[str, Any]
) -> dict[str, Any]:
    """What the agent is handed about its model: the episode's gateway URL, never the key."""
    from toolproof.gateway import PLACEHOLDER_KEY

    given = {k: v for k, v in options.items() if k not in HARNESS_OPTIONS}
    given.update(base_url=urls[plan.api], api_key=PLACEHOLDER_KEY, provider=plan.provider)
    if plan.model is not None:
        given["model"] = plan.model
    return given


@contextlib.asynccontextmanager
async def episode_link(
    plan: GatewayPlan, epoch: int, session: ToolSession
) -> AsyncIterator[EpisodeLink]:
    """The episode's gateway path while the agent runs; each call's usage lands on the session.

    The gateway answers on its own thread, so each call's usage (and, where the
    session takes it, the call itself: ``record_model_call``, listed in the next
    step's ``annotations["model_calls"]``) is handed to the agent's event loop (where
    the session lives) with ``call_soon_threadsafe``.

    Raises:
        AgentInfraError: a model call failed for reasons not the agent's (the agent's
            own exception, if it raised one because of it, is replaced).
    """
    loop = asyncio.get_running_loop()

    record_call = getattr(session, "record_model_call", None)

    def deliver(call: ModelCall) -> None:  # on the agent's loop, in the order calls ended
        session.record_usage(call.usage)
        if callable(record_call):
            record_call(call.summary())

    def sink(call: ModelCall) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the episode is over
            loop.call_soon_threadsafe(deliver, call)

    server = gateway.shared()
    link = server.open(plan.route, epoch, sink)
    try:
        try:
            yield link
        except Exception:
            if link.infra_error is not None:  # the gateway saw it: whatever the agent raised
                raise observed_outage(link.infra_error) from None
            raise  # the agent's own, an AgentInfraError it made included: an agent_error
        if link.infra_error is not None:
            raise observed_outage(link.infra_error)
    finally:
        server.close(link)
