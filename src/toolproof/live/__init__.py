"""The live track's egress proxy: real HTTP services, allowlisted, recorded and replayed.

Map::

    _session.py   open_live(suite, tasks, mode, ...) -> LiveRun (the proxy + config.live)
    _proxy.py     EgressProxy: loopback forward proxy; record (upstream) or replay (cassette)
    _policy.py    the allowlist (hosts, methods, IP/localhost tricks), limits, secrets
    _cassette.py  Cassette files, request keys (method, normalised URL, body digest)

Like ``toolproof.mcp``, this serves agents during a run and decides no score.
The ``live`` toolkit (``toolproof.tools.toolkits.live``) is its only client.
"""

from __future__ import annotations

from toolproof.spec.live import live_tasks

from ._cassette import Cassette, CassetteError, cassettes_digest, normalise_url, request_key
from ._policy import Refused, check_url
from ._proxy import REDACTED, VERDICT_HEADER, EgressProxy, Resolver, TaskAccess
from ._session import RECORDED, LiveError, LiveRun, open_live, shipped_cassettes

__all__ = [
    "RECORDED",
    "REDACTED",
    "VERDICT_HEADER",
    "Cassette",
    "CassetteError",
    "EgressProxy",
    "LiveError",
    "LiveRun",
    "Refused",
    "Resolver",
    "TaskAccess",
    "cassettes_digest",
    "check_url",
    "live_tasks",
    "normalise_url",
    "open_live",
    "request_key",
    "shipped_cassettes",
]
