"""The egress allowlist: which URL a live task may reach, and why not.

Checks are on the parsed URL, never on its text: the scheme must be http or
https, the host a listed name (IP literals, ``localhost`` and user-info tricks
are refused outright), the port the scheme's default unless listed, the method
listed. Without a test resolver, a host must also resolve to public addresses
only, and the proxy connects to the address it checked (no DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from toolproof.spec.live import LiveSpec

_DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(Exception):
    """The proxy refuses a request; the message says why (the agent sees it)."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Target:
    """An allowed request's destination."""

    scheme: str
    host: str
    port: int


def check_url(url: str, method: str, spec: LiveSpec) -> Target:
    """The destination of an allowed request.

    Raises:
        Refused: the URL, host, port or method is not allowed, naming which.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"not a valid URL: {url!r} ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise Refused(f"only http and https URLs may be fetched, not {url!r}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise Refused(f"URLs with user info are refused: {url!r}")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise Refused(f"the URL has no host: {url!r}")
    if _is_ip(host):
        raise Refused(f"IP addresses are never allowed, only listed host names: {host!r}")
    port = port if port is not None else _DEFAULT_PORTS[scheme]
    allowed = spec.hosts
    listed = f"{host}:{port}" in allowed or (port == _DEFAULT_PORTS[scheme] and host in allowed)
    if not listed:
        raise Refused(
            f"host {host if port == _DEFAULT_PORTS[scheme] else f'{host}:{port}'!r} is not on "
            f"this task's allowlist ({', '.join(allowed)})"
        )
    if method.upper() not in spec.methods:
        raise Refused(
            f"method {method.upper()} is not allowed to {host} "
            f"(allowed: {', '.join(spec.methods)})",
            405,
        )
    return Target(scheme, host, port)


def _is_ip(host: str) -> bool:
    text = host.strip("[]")
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    try:  # inet_aton accepts the odd forms browsers do: 0x7f.1, 2130706433, 127.1
        socket.inet_aton(text)
        return True
    except OSError:
        return False


def public_address(host: str, port: int) -> str:
    """Resolve a host and return one address, refusing non-public ones.

    Raises:
        Refused: (502) the name does not resolve: the host is on the task's list, so that is
            an outage the proxy witnessed (``infra``), not the agent's doing; (403) it
            resolves to a private, loopback, link-local or otherwise non-global address.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Refused(f"cannot resolve {host!r}: {exc}", 502) from None
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        if not ipaddress.ip_address(address.split("%")[0]).is_global:
            raise Refused(f"host {host!r} resolves to a non-public address ({address})")
    if not addresses:
        raise Refused(f"cannot resolve {host!r}", 502)
    return addresses[0]


@dataclass
class Limiter:
    """Per-episode request counts: a total and a 60-second window."""

    spec: LiveSpec
    total: int = 0
    recent: deque[float] = field(default_factory=deque)

    def take(self, now: float) -> None:
        """Count one request.

        Raises:
            Refused: (429) the episode's total or per-minute limit is reached.
        """
        if self.total >= self.spec.max_requests:
            raise Refused(f"request limit reached: {self.spec.max_requests} per episode", 429)
        while self.recent and now - self.recent[0] >= 60.0:
            self.recent.popleft()
        if len(self.recent) >= self.spec.requests_per_minute:
            raise Refused(
                f"rate limit reached: {self.spec.requests_per_minute} requests per minute", 429
            )
        self.total += 1
        self.recent.append(now)


class Limits:
    """The limiters of every episode, made on first use (thread-safe)."""

    def __init__(self) -> None:
        self._by_episode: dict[str, Limiter] = {}
        self._lock = threading.Lock()

    def take(self, episode: str, spec: LiveSpec) -> None:
        """Count one request of an episode (see :meth:`Limiter.take`)."""
        with self._lock:
            limiter = self._by_episode.setdefault(episode, Limiter(spec))
            limiter.take(time.monotonic())


def secret_values(spec: LiveSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The values of a spec's secrets, by env var name.

    Raises:
        LookupError: a named variable is not set (message names it, not a value).
    """
    values = {}
    for secret in spec.secrets:
        value = environ.get(secret.env)
        if not value:
            raise LookupError(
                f"the live task needs the environment variable {secret.env} (a secret the proxy "
                f"sends to {secret.host}); fix: export {secret.env}=... before the run"
            )
        values[secret.env] = value
    return values
