"""The REST service of :mod:`.rest` behind bearer tokens: log in first, then call.

Record layout (besides ``api`` and ``api_meta``, see :mod:`.rest`)::

    api_auth:  {clients: {CLIENT_ID: SECRET}, tokens: {TOKEN: CLIENT_ID}}

``api_token`` trades a client id and its secret for a token; ``api_call`` is
``http_request`` with that token, and answers ``HTTP 401`` without a token the
service issued. A token is derived from the client's secret and a counter (no
clock, no randomness), so an agent that never read the secret cannot forge one,
and a run is reproducible. A task that uses these tools lists the token table in
its collateral check's ``allow_changes`` (``api_auth.tokens``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool
from .rest import _request

MAX_TOKENS = 50
"""Tokens one episode may hold: a login loop ends with an error, not an ever-growing table."""


def token_for(client_id: str, secret: str, issued: int) -> str:
    """The token :func:`api_token` issues to a client that already holds ``issued`` tokens.

    Task generators use it to write reference solutions; agents never see it.
    """
    seed = f"{client_id}\n{secret}\n{issued}".encode()
    return "tk_" + hashlib.sha256(seed).hexdigest()[:24]


def _auth(ctx: ToolContext) -> dict[str, Any]:
    auth = ctx.world.records.get("api_auth")
    if not isinstance(auth, dict):
        raise ToolError("HTTP 503 Service Unavailable: this service has no authentication set up")
    return auth


@tool(kind=ToolKind.WRITE)
def api_token(ctx: ToolContext, client_id: str, client_secret: str) -> dict[str, Any]:
    """Log in to the service's API: trade a client id and secret for a bearer token.

    Args:
        client_id: The API client's id.
        client_secret: The client's secret.
    """
    auth = _auth(ctx)
    clients = auth.get("clients") or {}
    secret = clients.get(client_id) if isinstance(clients, dict) else None
    if not isinstance(secret, str) or not hmac.compare_digest(
        secret.encode(), str(client_secret).encode()
    ):
        raise ToolError("HTTP 401 Unauthorized: unknown client id or wrong secret")
    tokens = auth.setdefault("tokens", {})
    if not isinstance(tokens, dict) or len(tokens) >= MAX_TOKENS:
        raise ToolError(f"HTTP 429 Too Many Requests: at most {MAX_TOKENS} tokens; reuse yours")
    token = token_for(client_id, secret, len(tokens))
    tokens[token] = client_id
    return {"access_token": token, "token_type": "bearer"}


@tool(kind=ToolKind.WRITE)
def api_call(
    ctx: ToolContext, token: str, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Send an authenticated HTTP request to the service's JSON API; returns {status, body}.

    Routes: GET / (index), GET /{collection}?field=value&q=text&sort=-field&page=N&per_page=N,
    POST /{collection}, GET|PATCH|PUT|DELETE /{collection}/{id}, GET|POST
    /{collection}/{id}/{list}. Errors come back as "HTTP <code> <reason>: <why>"; without a
    token from api_token the answer is HTTP 401.

    Args:
        token: The access token api_token returned.
        method: GET, POST, PUT, PATCH or DELETE.
        path: The path with its query string, e.g. "/products?page=2".
        body: The JSON body for POST, PUT and PATCH.
    """
    tokens = _auth(ctx).get("tokens") or {}
    if not isinstance(tokens, dict) or not isinstance(token, str) or token not in tokens:
        raise ToolError(
            "HTTP 401 Unauthorized: missing or unknown token; get one from api_token first"
        )
    return _request(ctx, method, path, body)
