"""What one run's gateway forwards to, and how: upstreams, cache, prices, retries, limits.

The route is made once per run by the agent adapter that uses the gateway (it owns the
price table, the cache and the retry policy, which live in ``toolproof.agents``); the
gateway only calls the hooks it is given, so it depends on no layer above it.

Who is to blame for a failed call (ARCHITECTURE.md, invariant 8) is decided here, by
:func:`agents_status` and :meth:`Route.refusal`: the model the agent names, its request
body and whatever the provider answers to what the agent chose are the agent's (the agent
sees the error, the episode is scored); only what the gateway witnessed failing on the
run's side (a 5xx, a timeout or a rate limit that outlived the retries, no connection, the
run's key or account refused, the run's own model unknown) makes the episode
``infra_error``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from toolproof.trajectory import Usage

from ._usage import Counted

Api = Literal["openai", "anthropic"]
"""The wire protocols the gateway speaks: OpenAI Chat Completions and Anthropic Messages."""

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
"""The providers' own endpoints, in their SDKs' convention (OpenAI's ends in ``/v1``)."""


@dataclass(frozen=True)
class Upstream:
    """A real provider endpoint behind the gateway.

    Attributes:
        api: The wire protocol it speaks.
        base_url: Its base URL in the SDK's convention (``https://api.openai.com/v1``,
            ``https://api.anthropic.com``).
        api_key: The key the gateway sends; it never leaves the harness.
        call: A provider reached through a library instead of HTTP (``litellm:``): called
            with the request path and body in place of the POST; it answers in the API's
            wire format and raises :class:`UpstreamStatus` for an error status.
    """

    api: Api
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    call: Callable[[str, dict[str, Any]], Awaitable[UpstreamReply]] | None = field(
        default=None, repr=False, compare=False
    )

    def url(self, rest: str) -> str:
        """The upstream URL of a request path such as ``chat/completions`` or ``messages``."""
        base = self.base_url.rstrip("/")
        if self.api == "anthropic" and not base.endswith("/v1"):
            base += "/v1"
        return f"{base}/{rest}"

    def headers(self, client: Mapping[str, str]) -> dict[str, str]:
        """The headers of a forwarded request: the harness's key, the client's API version."""
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.api == "anthropic":
            headers["anthropic-version"] = client.get("anthropic-version", "2023-06-01")
            if "anthropic-beta" in client:
                headers["anthropic-beta"] = client["anthropic-beta"]
            if self.api_key:
                headers["x-api-key"] = self.api_key
        elif self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers


@dataclass(frozen=True)
class UpstreamReply:
    """What the provider answered: status, content type and the body as text."""

    status: int
    content_type: str
    body: str
    headers: Mapping[str, str] = field(default_factory=dict)


class UpstreamStatus(Exception):
    """The provider answered with an error status (raised by a send, for the retrier)."""

    def __init__(self, reply: UpstreamReply) -> None:
        super().__init__(f"HTTP {reply.status}")
        self.reply = reply


RUNS_SIDE_STATUSES = frozenset({401, 402, 403, 407, 408, 409, 429})
"""Provider statuses about the run, not the request: its key, its account, its rate limit,
a conflict, a timeout or a rate limit (409, 408 and 429 only once the retries gave up)."""


def agents_status(status: int, *, runs_model: bool) -> bool:
    """Whether a provider's error status answers something the agent chose.

    A 4xx is the agent's (its body, its parameters, a model it named that does not exist),
    except the statuses about the run itself (:data:`RUNS_SIDE_STATUSES`) and a 404 for the
    model the run named (``--model``: the person running toolproof chose it, not the agent).
    A 5xx is never the agent's.

    Args:
        status: The provider's HTTP status (400 or above).
        runs_model: The request named the run's own model.
    """
    if status >= 500 or status < 400 or status in RUNS_SIDE_STATUSES:
        return False
    return not (status == 404 and runs_model)


class GatewayFailure(Exception):
    """A forwarded call failed for good.

    Attributes:
        infra: True when it is not the agent's fault (outage after retries, bad key):
            the episode ends as ``infra_error``. False: the provider rejected the
            agent's request (its reply is passed back as is).
        reply: The provider's last error reply, when there was one.
    """

    def __init__(self, message: str, *, infra: bool, reply: UpstreamReply | None = None) -> None:
        super().__init__(message)
        self.infra = infra
        self.reply = reply


Send = Callable[[], Awaitable[UpstreamReply]]
Retrier = Callable[[Send], Awaitable[UpstreamReply]]
"""Calls a send until it succeeds; raises :class:`GatewayFailure` when it gives up."""

Pricer = Callable[[str, Counted | None, int, int], Usage]
"""``(model, counted, request_chars, reply_chars) -> Usage`` (estimates when not counted)."""


class ReplyCache(Protocol):
    """Exact replays of forwarded calls, by request (``--cache DIR``)."""

    def get_raw(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored reply to a request (``status``, ``content_type``, ``body``), or None."""
        ...

    def put_raw(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> object:
        """Store a reply."""
        ...


async def send_once(send: Send) -> UpstreamReply:
    """The default retrier: one attempt; an error status is final."""
    try:
        return await send()
    except UpstreamStatus as exc:
        status = exc.reply.status
        infra = status >= 500 or status in (*RUNS_SIDE_STATUSES, 404)  # the gateway decides 404
        text = f"HTTP {status}: {exc.reply.body[:300]}"
        raise GatewayFailure(text, infra=infra, reply=exc.reply) from exc


def _no_price(model: str, counted: Counted | None, request_chars: int, reply_chars: int) -> Usage:
    if counted is None:
        return Usage(input_tokens=0, output_tokens=0, estimated=True)
    return Usage(input_tokens=counted.input_tokens, output_tokens=counted.output_tokens)


@dataclass
class Route:
    """One run's gateway settings (shared by its episodes; used on the gateway's loop).

    Attributes:
        upstreams: The provider behind each API.
        retrier: Retries with the run's shared rate-limit backoff.
        pricer: Tokens and cost of a call.
        cache: Exact replays (``--cache``), or None.
        max_concurrent: At most this many upstream calls at once (``--max-model-calls``).
        timeout_s: Seconds one upstream call may take.
        model: The model the run named (``--model``): the only one forwarded, unless
            ``allow_other_models``. None: the run named none, so the agent's choice goes.
        allow_other_models: Forward any model the agent names (``--allow-other-models``);
            each call is recorded and priced under the model it named.
    """

    upstreams: dict[str, Upstream]
    retrier: Retrier = send_once
    pricer: Pricer = _no_price
    cache: ReplyCache | None = None
    max_concurrent: int | None = None
    timeout_s: float = 120.0
    model: str | None = None
    allow_other_models: bool = False
    upstream_calls: int = 0
    """Calls forwarded to a provider (not answered from the cache), for reports and tests."""
    _slots: asyncio.Semaphore | None = None

    def refusal(self, model: str) -> str | None:
        """Why a request naming ``model`` is not forwarded (None: it is).

        The run's key pays for the run's model: an agent that names another one is refused
        (its error), so that every agent of a comparison is held to the same ``--model``.
        """
        if self.model is None or self.allow_other_models or model == self.model:
            return None
        return (
            f"model {model[:200]!r} is not served here: this run allows only {self.model!r} "
            f"(its --model); use model {self.model!r}, or the person running toolproof can "
            "pass --allow-other-models"
        )

    def slots(self) -> asyncio.Semaphore | None:
        """The semaphore bounding concurrent upstream calls (made on first use)."""
        if self.max_concurrent is not None and self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrent)
        return self._slots
