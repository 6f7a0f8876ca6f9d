"""Retries of model calls, once for every adapter.

The SDKs' own retries are turned off (``max_retries=0``) so that every adapter
retries the same way: rate limits (429), server errors (5xx, 529), 408/409,
timeouts and connection errors are retried with exponential backoff and
jitter, honouring ``retry-after-ms`` / ``retry-after``. What is left after the
last retry is an :class:`~toolproof.agents.AgentInfraError` (the episode ends
in ``infra_error``, is retried by the runner and kept out of the
denominators). A request the provider rejects as malformed (other 4xx) is an
:class:`AgentRequestError`, an ``agent_error``: retrying would not help.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from .._outage import observed_outage

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 409, 429})
"""Client-side statuses worth retrying; every 5xx is retried too."""

INFRA_STATUSES = frozenset({401, 402, 403, 404})
"""Statuses that say the run is misconfigured (key, billing, model name): infra, not retried."""


class BadResponse(Exception):
    """The callee answered with something that is not a reply (garbage, or the wrong shape)."""


class AgentRequestError(Exception):
    """The provider rejected a request as malformed (a 4xx): the episode is an agent_error."""


@dataclass(frozen=True)
class Failure:
    """What a failed request means.

    Attributes:
        kind: ``retry`` (transient), ``infra`` (not the agent's fault, not worth
            retrying) or ``agent`` (the request was bad).
        message: What happened, for people.
        retry_after: Seconds the provider asked us to wait, if it did.
    """

    kind: Literal["retry", "infra", "agent"]
    message: str
    retry_after: float | None = None
    rate_limited: bool = False


Classifier = Callable[[BaseException], Failure | None]
"""Maps an exception to a :class:`Failure`, or None for a bug (re-raised as is)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry.

    Attributes:
        max_retries: Retries after the first attempt.
        backoff_base: Seconds before the first retry; doubled each retry.
        backoff_max: The longest wait, also the cap on ``retry-after``.
    """

    max_retries: int = 4
    backoff_base: float = 1.0
    backoff_max: float = 60.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based).

        The provider's ``retry-after`` wins when given; otherwise exponential
        backoff with equal jitter: half the step, plus a random part of the other half.
        """
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.backoff_max)
        step = min(self.backoff_base * 2.0**retry, self.backoff_max)
        return step / 2 + rng.uniform(0, step / 2)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``retry-after`` (seconds, a date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_failure(status: int, message: str, headers: Mapping[str, str] | None = None) -> Failure:
    """Classify an HTTP error status."""
    text = f"HTTP {status}: {message}"
    if status in RETRY_STATUSES or status >= 500:
        return Failure(
            "retry", text, retry_after_seconds(headers), rate_limited=status in (429, 529)
        )
    if status in INFRA_STATUSES:
        return Failure("infra", text)
    return Failure("agent", text)


def sdk_error_message(exc: Exception) -> str:
    """The provider's own message in an SDK status error (``error.message`` of the body)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str):
            return message
    return str(getattr(exc, "message", exc))


class SharedBackoff:
    """A pause shared by every call of a run: a rate limit met by one episode slows them all.

    Without it, hundreds of concurrent episodes that each back off alone keep
    hitting a provider that has already said "too many requests".
    """

    def __init__(self) -> None:
        self._until = 0.0

    async def wait(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """Wait out the pause in force, if any."""
        delay = self._until - time.monotonic()
        if delay > 0:
            await sleep(delay)

    def hold(self, seconds: float) -> None:
        """Make every call wait until at least ``seconds`` from now."""
        self._until = max(self._until, time.monotonic() + seconds)


async def call_with_retries(
    send: Callable[[], Awaitable[T]],
    classify: Classifier,
    policy: RetryPolicy,
    what: str,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rng: random.Random | None = None,
    shared: SharedBackoff | None = None,
) -> tuple[T, int]:
    """Call ``send`` until it succeeds or a failure is final.

    Args:
        send: Makes one request.
        classify: Says what an exception means.
        policy: Retry budget and backoff.
        what: Names the callee in messages, e.g. ``openai:gpt-4o``.
        sleep: The wait (tests pass a recorder).
        rng: Jitter source.
        shared: The run's shared pause: honoured before each request, and set
            when the provider says it is rate limiting.

    Returns:
        The result and how many retries it took.

    Raises:
        AgentInfraError: a transient failure outlived the retries, or an infra failure.
        AgentRequestError: the request was rejected as malformed.
    """
    rng = rng or random.Random()
    retries = 0
    backed_off = False  # right after our own backoff, the shared pause is already waited out
    while True:
        try:
            if shared is not None and not backed_off:
                await shared.wait(sleep)
            return await send(), retries
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if failure.kind == "agent":
                raise AgentRequestError(f"{what} rejected the request: {failure.message}") from exc
            if failure.kind == "infra":
                raise observed_outage(f"{what}: {failure.message}") from exc
            if retries >= policy.max_retries:
                raise observed_outage(
                    f"{what}: {failure.message} (gave up after {retries} "
                    f"retr{'y' if retries == 1 else 'ies'})"
                ) from exc
            delay = policy.delay(retries, failure.retry_after, rng)
            if shared is not None and failure.rate_limited:
                shared.hold(delay)
            await sleep(delay)
            backed_off = True
            retries += 1
