"""Retries: which failures are retried, how long the waits are, what is left after them."""

from __future__ import annotations

import email.utils
import random
import time

import pytest

from toolproof.agents import AgentInfraError
from toolproof.agents.adapters._retry import (
    AgentRequestError,
    Failure,
    RetryPolicy,
    SharedBackoff,
    call_with_retries,
    retry_after_seconds,
    status_failure,
)


class Flaky:
    """Fails with the given exceptions, then returns "ok"."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


class Status(Exception):
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"status {status}")
        self.status = status
        self.headers = headers or {}


def classify(exc: BaseException) -> Failure | None:
    if isinstance(exc, Status):
        return status_failure(exc.status, "nope", exc.headers)
    if isinstance(exc, TimeoutError):
        return Failure("retry", "the request timed out")
    return None


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


POLICY = RetryPolicy(max_retries=3, backoff_base=1.0, backoff_max=8.0)


async def test_transient_failures_are_retried_with_growing_jittered_waits() -> None:
    send, sleep = Flaky(Status(429), Status(500), TimeoutError()), Sleeps()
    result = await call_with_retries(send, classify, POLICY, "m", sleep=sleep, rng=random.Random(1))
    assert result == ("ok", 3)
    assert send.calls == 4
    # Equal jitter: half the doubling step, plus up to the other half.
    for wait, step in zip(sleep.waits, [1.0, 2.0, 4.0], strict=True):
        assert step / 2 <= wait <= step


async def test_retry_after_is_honoured_and_capped() -> None:
    send, sleep = (
        Flaky(Status(429, {"retry-after-ms": "250"}), Status(503, {"retry-after": "30"})),
        Sleeps(),
    )
    await call_with_retries(send, classify, POLICY, "m", sleep=sleep)
    assert sleep.waits == [0.25, 8.0]


async def test_what_outlives_the_retries_is_an_infra_error() -> None:
    send = Flaky(*[Status(502) for _ in range(10)])
    with pytest.raises(AgentInfraError, match=r"m: HTTP 502: nope \(gave up after 3 retries\)"):
        await call_with_retries(send, classify, POLICY, "m", sleep=Sleeps())
    assert send.calls == 4


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_a_rejected_request_is_not_retried(status: int) -> None:
    send = Flaky(Status(status))
    with pytest.raises(AgentRequestError, match=f"m rejected the request: HTTP {status}"):
        await call_with_retries(send, classify, POLICY, "m", sleep=Sleeps())
    assert send.calls == 1


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_configuration_failures_are_infra_and_not_retried(status: int) -> None:
    send = Flaky(Status(status))
    with pytest.raises(AgentInfraError, match=f"HTTP {status}"):
        await call_with_retries(send, classify, POLICY, "m", sleep=Sleeps())
    assert send.calls == 1


async def test_bugs_are_not_swallowed() -> None:
    send = Flaky(KeyError("oops"))
    with pytest.raises(KeyError):
        await call_with_retries(send, classify, POLICY, "m", sleep=Sleeps())


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "15", "retry-after": "1"}) == 0.015
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    seconds = retry_after_seconds({"retry-after": later})
    assert seconds is not None and 50 < seconds <= 61


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (408, "retry"),
        (409, "retry"),
        (429, "retry"),
        (500, "retry"),
        (529, "retry"),
        (401, "infra"),
        (404, "infra"),
        (400, "agent"),
        (422, "agent"),
    ],
)
def test_status_classes(status: int, kind: str) -> None:
    assert status_failure(status, "x").kind == kind


class _Rejected(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


async def test_a_rate_limit_pauses_every_call_of_the_run() -> None:
    shared = SharedBackoff()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    pending = [status_failure(429, "slow down", {"retry-after": "5"})]

    async def limited() -> str:
        if pending:
            raise _Rejected(pending.pop())
        return "a"

    async def other() -> str:
        return "b"

    def classify(exc: BaseException) -> Failure | None:
        return exc.failure if isinstance(exc, _Rejected) else None

    policy = RetryPolicy(max_retries=2)
    assert await call_with_retries(limited, classify, policy, "m", sleep=sleep, shared=shared) == (
        "a",
        1,
    )
    assert slept == [5.0]
    slept.clear()
    # Another episode's call, which never saw the 429, waits out the same pause.
    assert await call_with_retries(other, classify, policy, "m", sleep=sleep, shared=shared) == (
        "b",
        0,
    )
    assert len(slept) == 1 and 4.0 < slept[0] <= 5.0


async def test_a_server_error_does_not_pause_other_calls() -> None:
    shared = SharedBackoff()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    pending = [status_failure(500, "boom")]

    async def flaky() -> str:
        if pending:
            raise _Rejected(pending.pop())
        return "a"

    def classify(exc: BaseException) -> Failure | None:
        return exc.failure if isinstance(exc, _Rejected) else None

    policy = RetryPolicy(max_retries=2, backoff_base=0.01)
    await call_with_retries(flaky, classify, policy, "m", sleep=sleep, shared=shared)
    slept.clear()

    async def other() -> str:
        return "b"

    await call_with_retries(other, classify, policy, "m", sleep=sleep, shared=shared)
    assert slept == []
