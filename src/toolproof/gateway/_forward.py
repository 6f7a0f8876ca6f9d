"""One forwarded call: check the request, answer from the cache or the provider, record it.

The request body is the agent's bytes: it passes the one ingress
(:mod:`toolproof.trajectory.ingress`: strict UTF-8, JSON within a size and a nesting depth,
no lone surrogate escape) before anything reads it, and whatever fails there is a 400 in
the API's own error shape, never a 500. Whether a failed call is the agent's or the run's
(invariant 8) is decided in :func:`forward`, with :func:`~._route.agents_status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Mapping
from typing import Any

import httpx
from starlette.responses import JSONResponse, Response

from toolproof.trajectory import Usage, ingress

from ._link import EpisodeLink, ModelCall
from ._route import Api, GatewayFailure, UpstreamReply, UpstreamStatus, agents_status
from ._usage import json_usage, stream_usage

MAX_MODEL_CHARS = 256
"""The longest model name accepted in a request."""

FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")
"""Client headers the gateway passes on to the provider (the agent's bytes: checked)."""

MAX_HEADER_CHARS = 256
"""The longest value of a forwarded header."""

NO_RETRY = {"x-should-retry": "false"}
"""Tells the official SDKs not to retry an answer: the gateway has retried already."""

ENDPOINTS: dict[str, tuple[str, ...]] = {
    "openai": ("chat/completions",),
    "anthropic": ("messages",),
}
"""The request paths (after ``/v1/``) the gateway forwards, by API."""


def error_body(
    api: str, message: str, kind: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    """An error body in the API's own shape."""
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error(
    api: str,
    status: int,
    message: str,
    kind: str = "invalid_request_error",
    code: str | None = None,
) -> Response:
    """An error in the API's own shape, so that the SDK raises its usual exception."""
    body = error_body(api, message, kind, code)
    return JSONResponse(body, status_code=status, headers=NO_RETRY)


def check_request(api: str, raw: bytes, limit: int = 16 * 1024 * 1024) -> dict[str, Any] | Response:
    """The request body as plain JSON data through the ingress, or the 400 that refuses it.

    Args:
        api: The API (for the error's shape).
        raw: The body as sent.
        limit: The most characters of JSON accepted.
    """
    try:
        body = ingress.parse_json(raw, "the request body", limit)
    except ingress.IngressError as exc:
        return error(api, 400, str(exc)[:500])
    if not isinstance(body, dict):
        return error(api, 400, f"the request body must be a JSON object, got {type(body).__name__}")
    if not isinstance(body.get("model"), str) or not body["model"]:
        return error(api, 400, "the request names no model (field 'model')")
    if len(body["model"]) > MAX_MODEL_CHARS:
        return error(api, 400, f"the model name is over {MAX_MODEL_CHARS} characters")
    if not isinstance(body.get("messages"), list):
        return error(api, 400, "the request has no 'messages' list")
    return body


def check_headers(api: str, headers: Mapping[str, str]) -> Response | None:
    """The 400 refusing a forwarded header the provider could not be sent, or None.

    A value must be printable ASCII of at most :data:`MAX_HEADER_CHARS` characters: anything
    else would fail on the way to the provider, and it is the agent's, not an outage.
    """
    for name in FORWARDED_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        if len(value) > MAX_HEADER_CHARS or not all(" " <= c <= "~" for c in value):
            return error(
                api,
                400,
                f"header {name} must be printable ASCII of at most {MAX_HEADER_CHARS} "
                f"characters, got {value[:60]!r}",
            )
    return None


def upstream_body(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """What goes to the provider: a streamed OpenAI call is asked for its usage too."""
    if api == "openai" and body.get("stream") is True:
        options = body.get("stream_options")
        options = dict(options) if isinstance(options, dict) else {}
        options["include_usage"] = True
        return {**body, "stream_options": options}
    return body


def _chars(body: Mapping[str, Any]) -> int:
    return sum(
        len(json.dumps(body.get(k), ensure_ascii=False)) for k in ("messages", "tools", "system")
    )


async def forward(
    link: EpisodeLink,
    api: Api,
    rest: str,
    body: dict[str, Any],
    client_headers: Mapping[str, str],
    client: httpx.AsyncClient,
    limit: asyncio.Semaphore | None = None,
) -> Response:
    """Answer one call of an episode: from the cache, else from the provider (with retries).

    Every call that gets an answer is recorded on the link (and so in the episode); a
    failure that is not the agent's is noted on the link, so the episode becomes an
    ``infra_error``. Invariant 8 is decided here:

    * the agent's (answered with the error, the episode is scored): a model the run does
      not allow (400, recorded as a refused call), an API the run has no upstream for, a
      provider 4xx for what the agent sent (:func:`~._route.agents_status`: a bad body,
      a model it named that does not exist);
    * the run's (``infra_error``): a 5xx, timeout or rate limit that outlived the retries,
      no connection, the run's key or account refused, the run's own model unknown.
    """
    route = link.route
    model = str(body["model"])
    refused = route.refusal(model)
    if refused is not None:  # the run's key pays for the run's model only
        shown = json.dumps(error_body(api, refused, code="model_not_allowed"))
        unpaid = Usage(input_tokens=0, output_tokens=0)
        # kept by its digest at once: refusals cost the agent nothing, so they may be many
        link.add(ModelCall(api, model, 400, 0.0, False, unpaid, body, shown).compact())
        return error(api, 400, refused, code="model_not_allowed")
    upstream = route.upstreams.get(api)
    if upstream is None:
        return error(api, 404, f"this run has no {api} upstream; give --model {api}:MODEL")
    sent = upstream_body(api, body)
    streamed = sent.get("stream") is True
    key = {"gateway": api, "path": rest, "body": sent, "epoch": link.epoch}
    t0 = time.perf_counter()
    stored = route.cache.get_raw(key) if route.cache is not None else None
    if stored is not None:
        reply = UpstreamReply(200, str(stored["content_type"]), str(stored["body"]))
    else:
        try:
            reply = await _fetch(link, api, rest, sent, client_headers, client, limit)
        except GatewayFailure as exc:
            refusal = exc.reply
            runs_model = route.model is not None and model == route.model
            if refusal is not None and agents_status(refusal.status, runs_model=runs_model):
                return _response(refusal)  # the provider refused what the agent chose
            if exc.infra:
                link.fail(f"model gateway: {api} {model}: {exc}")
                return error(api, 502, f"the model provider failed: {exc}", "api_error")
            if refusal is None:
                return error(api, 400, str(exc))
            return _response(refusal)  # the provider refused the agent's request
        if route.cache is not None:
            route.cache.put_raw(
                key, {"status": 200, "content_type": reply.content_type, "body": reply.body}
            )
    counted = stream_usage(api, reply.body) if streamed else _json_usage(api, reply.body)
    usage = route.pricer(body["model"], counted, _chars(body), len(reply.body))
    link.add(
        ModelCall(
            api=api,
            model=body["model"],
            status=reply.status,
            latency_s=time.perf_counter() - t0,
            cached=stored is not None,
            usage=usage,
            request=body,
            reply=reply.body,
        )
    )
    return _response(reply)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _json_usage(api: str, text: str) -> Any:
    try:
        return json_usage(api, json.loads(text))
    except ValueError:
        return None


def _response(reply: UpstreamReply) -> Response:
    return Response(
        reply.body, status_code=reply.status, media_type=reply.content_type, headers=NO_RETRY
    )


async def _fetch(
    link: EpisodeLink,
    api: Api,
    rest: str,
    body: dict[str, Any],
    client_headers: Mapping[str, str],
    client: httpx.AsyncClient,
    limit: asyncio.Semaphore | None,
) -> UpstreamReply:
    route = link.route
    upstream = route.upstreams[api]
    url = upstream.url(rest)
    headers = upstream.headers(client_headers)
    content = json.dumps(body, ensure_ascii=False).encode()
    streamed = body.get("stream") is True

    async def send() -> UpstreamReply:
        async with contextlib.AsyncExitStack() as held:
            for slots in (limit, route.slots()):
                if slots is not None:
                    await held.enter_async_context(slots)
            if upstream.call is not None:  # a provider behind a library (litellm:)
                route.upstream_calls += 1
                return await upstream.call(rest, body)
            return await _post(url, headers, content)

    async def _post(url: str, headers: dict[str, str], content: bytes) -> UpstreamReply:
        route.upstream_calls += 1
        answer = await client.post(url, headers=headers, content=content, timeout=route.timeout_s)
        reply = UpstreamReply(
            answer.status_code,
            answer.headers.get("content-type", "application/json"),
            answer.text,
            dict(answer.headers),
        )
        if answer.status_code >= 400:
            raise UpstreamStatus(reply)
        if not streamed and not _is_json(reply.body):  # garbage is the provider's, not the agent's
            raise UpstreamStatus(
                UpstreamReply(
                    502,
                    "text/plain",
                    f"the provider sent a reply that is not JSON: {reply.body[:200]!r}",
                )
            )
        return reply

    return await route.retrier(send)
