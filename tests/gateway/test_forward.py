"""One forwarded call, without a server: limits and failures (httpx's MockTransport upstream)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from toolproof.gateway import EpisodeLink, Route, Upstream
from toolproof.gateway._forward import forward

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
REPLY = {"choices": [{"message": {"role": "assistant", "content": "ok"}}], "usage": {}}


def link_for(route: Route) -> EpisodeLink:
    return EpisodeLink("t", 0, route, "http://127.0.0.1:1")


async def test_max_model_calls_bounds_concurrent_upstream_calls() -> None:
    inside, most = 0, 0
    release = asyncio.Event()
    arrived = 0

    async def upstream(request: httpx.Request) -> httpx.Response:
        nonlocal inside, most, arrived
        inside += 1
        most = max(most, inside)
        arrived += 1
        if arrived == 1:
            await release.wait()  # the first call holds its slot until told
        inside -= 1
        return httpx.Response(200, json=REPLY)

    route = Route(upstreams={"openai": Upstream("openai", "http://up/v1")}, max_concurrent=1)
    async with httpx.AsyncClient(transport=httpx.MockTransport(upstream)) as client:
        calls = [
            asyncio.create_task(
                forward(link_for(route), "openai", "chat/completions", BODY, {}, client)
            )
            for _ in range(3)
        ]
        while route.upstream_calls < 1:
            await asyncio.sleep(0)
        for _ in range(50):  # the others get every chance to start; the limit must hold them
            await asyncio.sleep(0)
        assert (arrived, inside) == (1, 1)
        release.set()
        replies = await asyncio.gather(*calls)
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert most == 1 and arrived == 3


async def test_a_lost_connection_reaches_the_server_as_an_error() -> None:
    async def upstream(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    route = Route(upstreams={"openai": Upstream("openai", "http://up/v1")})
    link = link_for(route)
    async with httpx.AsyncClient(transport=httpx.MockTransport(upstream)) as client:
        with pytest.raises(httpx.ConnectError):  # the server makes it a 502 and an infra error
            await forward(link, "openai", "chat/completions", BODY, {}, client)
    assert link.calls == []


async def test_the_upstream_gets_the_real_key_and_the_api_version() -> None:
    seen: list[dict[str, Any]] = []

    async def upstream(request: httpx.Request) -> httpx.Response:
        seen.append({"url": str(request.url), "headers": dict(request.headers)})
        body = {"content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}
        return httpx.Response(200, json=body)

    route = Route(upstreams={"anthropic": Upstream("anthropic", "http://up", "sk-ant-real")})
    link = link_for(route)
    headers = {"x-api-key": "toolproof-gateway", "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(transport=httpx.MockTransport(upstream)) as client:
        reply = await forward(link, "anthropic", "messages", BODY, headers, client)
    assert reply.status_code == 200
    (request,) = seen
    assert request["url"] == "http://up/v1/messages"
    assert request["headers"]["x-api-key"] == "sk-ant-real"
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    assert json.loads(bytes(reply.body))["usage"]["input_tokens"] == 3
    assert (link.calls[0].usage.input_tokens, link.calls[0].usage.output_tokens) == (3, 1)
