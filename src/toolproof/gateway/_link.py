"""One episode's entry to the gateway: an unguessable path, and what was called through it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolproof.trajectory import Usage

from ._route import Route

REPLY_CHARS = 64 * 1024
"""The most characters of a reply kept in the trajectory."""

KEEP_WHOLE = 16
"""An episode's latest calls kept whole on its link; older ones keep their request's digest
and the reply's first :data:`REPLY_CHARS` characters only, so that an episode sending
thousands of large requests (refused ones included) cannot grow the harness's memory."""


@dataclass(frozen=True)
class RequestDigest:
    """What an older call keeps of its request: the sha256 of its canonical JSON and the
    number of its messages (what the trajectory records of every call)."""

    sha256: str
    messages: int


def request_digest(request: Any) -> RequestDigest:
    """The digest of a request body (``request_sha256`` in the trajectory)."""
    if isinstance(request, RequestDigest):
        return request
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"))
    messages = request.get("messages") if isinstance(request, dict) else None
    return RequestDigest(
        hashlib.sha256(canonical.encode()).hexdigest(),
        len(messages) if isinstance(messages, list) else 0,
    )


def new_token() -> str:
    """An episode token: 192 random bits, URL-safe (a path segment nobody can guess)."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class ModelCall:
    """One model call an episode made through the gateway.

    Attributes:
        api: ``openai`` or ``anthropic``.
        model: The model the request named.
        status: The HTTP status the agent got.
        latency_s: Seconds the call took (near 0 for a cached reply).
        cached: True when the reply came from the cache (no provider call).
        usage: Tokens and cost.
        request: The request body as the agent sent it (its :class:`RequestDigest` once
            the call is no longer among the link's latest).
        reply: The reply body as the agent got it (text; an SSE stream as sent).
    """

    api: str
    model: str
    status: int
    latency_s: float
    cached: bool
    usage: Usage
    request: Any
    reply: str

    def summary(self, max_reply_chars: int = REPLY_CHARS) -> dict[str, Any]:
        """The call as plain data for the trajectory: the request by its digest (the whole
        transcript in every call would grow the record quadratically), the reply as sent
        (cut at ``max_reply_chars``), tokens, cost and latency."""
        digest = request_digest(self.request)
        return {
            "api": self.api,
            "model": self.model,
            "status": self.status,
            "latency_s": round(self.latency_s, 6),
            "cached": self.cached,
            "usage": self.usage.model_dump(mode="json"),
            "request_sha256": digest.sha256,
            "request_messages": digest.messages,
            "reply": self.reply[:max_reply_chars],
            "reply_truncated": len(self.reply) > max_reply_chars,
        }

    def compact(self) -> ModelCall:
        """The call as an older one is kept: the request's digest, the reply cut after
        :data:`REPLY_CHARS` characters (its summary is the same)."""
        return dataclasses.replace(
            self, request=request_digest(self.request), reply=self.reply[: REPLY_CHARS + 1]
        )


Sink = Callable[[ModelCall], None]
"""Told each call as it ends, on the gateway's thread (it must be thread-safe)."""


@dataclass
class EpisodeLink:
    """An episode's gateway path, open while the episode runs.

    Attributes:
        token: The secret path segment.
        epoch: The episode's epoch (k epochs are k samples: part of the cache key).
        route: The run's upstreams and hooks.
        base: The gateway's URL, ``http://127.0.0.1:PORT``.
        sink: Told each call (the episode records it).
        calls: Every call so far.
        infra_error: Set when a call failed for reasons not the agent's: the episode is
            then an ``infra_error`` whatever the agent did with the failure (only the
            gateway sets it, for what it witnessed on the run's side: invariant 8).
        in_flight: Requests of the episode being served now (on the gateway's loop).
    """

    token: str
    epoch: int
    route: Route
    base: str
    sink: Sink | None = None
    calls: list[ModelCall] = field(default_factory=list)
    infra_error: str | None = None
    in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def urls(self) -> dict[str, str]:
        """Base URLs for the SDKs: ``openai`` (ends in ``/v1``) and ``anthropic``."""
        return episode_urls(self.base, self.token)

    def env(self, model: str | None = None) -> dict[str, str]:
        """Environment variables that point a command-line agent's SDKs here."""
        urls = self.urls()
        env = {
            "OPENAI_BASE_URL": urls["openai"],
            "ANTHROPIC_BASE_URL": urls["anthropic"],
            "OPENAI_API_KEY": PLACEHOLDER_KEY,
            "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
        }
        if model:
            env["TOOLPROOF_MODEL"] = model
        return env

    def add(self, call: ModelCall) -> None:
        """Record a call and tell the sink (the latest :data:`KEEP_WHOLE` are kept whole)."""
        with self._lock:
            self.calls.append(call)
            older = len(self.calls) - KEEP_WHOLE - 1
            if older >= 0:
                self.calls[older] = self.calls[older].compact()
            sink = self.sink
        if sink is not None:
            sink(call)

    def fail(self, message: str) -> None:
        """Note an infrastructure failure (the first one is kept)."""
        with self._lock:
            if self.infra_error is None:
                self.infra_error = message


PLACEHOLDER_KEY = "toolproof-gateway"
"""The API key agents are given: the gateway ignores it and sends the run's real one."""


def episode_urls(base: str, token: str) -> dict[str, str]:
    """The SDK base URLs of one episode's path on a gateway at ``base``.

    Args:
        base: ``http://127.0.0.1:PORT`` (or, bridged into a sandbox, what reaches it there).
        token: The episode's token.

    Returns:
        ``{"openai": BASE/e/TOKEN/openai/v1, "anthropic": BASE/e/TOKEN/anthropic}``.
    """
    root = f"{base.rstrip('/')}/e/{token}"
    return {"openai": f"{root}/openai/v1", "anthropic": f"{root}/anthropic"}
