"""The model gateway over real HTTP: the official SDKs in front, the scripted server behind."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from toolproof.gateway import (
    EpisodeLink,
    ModelCall,
    ModelGateway,
    Route,
    Upstream,
    episode_urls,
)
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply, ScriptedToolCall
from toolproof.trajectory import Usage

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


class DictCache:
    """An in-memory ReplyCache."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def get_raw(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        import json

        return self.entries.get(json.dumps(request, sort_keys=True))

    def put_raw(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> None:
        import json

        self.entries[json.dumps(request, sort_keys=True)] = dict(reply)


@pytest.fixture(scope="module")
def gateway() -> Iterator[ModelGateway]:
    gw = ModelGateway(max_body_bytes=64 * 1024, body_timeout_s=1.0).start()
    yield gw
    gw.stop()


def route_to(server: ModelServer, **kwargs: Any) -> Route:
    return Route(
        upstreams={
            "openai": Upstream("openai", server.base_url, "sk-real-secret"),
            "anthropic": Upstream("anthropic", server.anthropic_base_url, "sk-ant-secret"),
        },
        **kwargs,
    )


def chat(link: EpisodeLink, **kwargs: Any) -> Any:
    client = openai.OpenAI(base_url=link.urls()["openai"], api_key="anything", max_retries=0)
    try:
        return client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], **kwargs
        )
    finally:
        client.close()


def test_a_call_is_forwarded_recorded_and_priced(gateway: ModelGateway) -> None:
    seen: list[ModelCall] = []

    def price(model: str, counted: Any, request_chars: int, reply_chars: int) -> Usage:
        assert counted is not None
        return Usage(
            input_tokens=counted.input_tokens, output_tokens=counted.output_tokens, cost_usd=0.5
        )

    with ModelServer([ScriptedReply("hello", usage=(11, 3))]) as server:
        link = gateway.open(route_to(server, pricer=price), epoch=0, sink=seen.append)
        reply = chat(link)
        upstream_body = server.requests[0]
    assert reply.choices[0].message.content == "hello"
    assert upstream_body["model"] == "gpt-4o-mini"
    (call,) = link.calls
    assert seen == [call]
    assert call.usage == Usage(input_tokens=11, output_tokens=3, cost_usd=0.5)
    assert (call.api, call.model, call.status, call.cached) == ("openai", "gpt-4o-mini", 200, False)
    assert call.request["messages"] == [{"role": "user", "content": "hi"}]
    assert link.infra_error is None
    gateway.close(link)


def test_streamed_openai_calls_report_their_usage(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply("a streamed reply", usage=(20, 5))]) as server:
        link = gateway.open(route_to(server), epoch=0)
        client = openai.OpenAI(base_url=link.urls()["openai"], api_key="x", max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        client.close()
        sent = server.requests[0]
    assert text == "a streamed reply"
    assert sent["stream_options"] == {"include_usage": True}
    assert link.calls[0].usage.input_tokens == 20 and link.calls[0].usage.output_tokens == 5
    gateway.close(link)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_go_through_with_their_usage(
    gateway: ModelGateway, stream: bool
) -> None:
    script = [ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 1})], usage=(30, 7))]
    with ModelServer(script) as server:
        link = gateway.open(route_to(server), epoch=0)
        client = anthropic.Anthropic(base_url=link.urls()["anthropic"], api_key="x", max_retries=0)
        kwargs: dict[str, Any] = {
            "model": "claude-haiku-4-5",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "add", "input_schema": {"type": "object"}}],
        }
        if stream:
            with client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        client.close()
    assert message.content[0].type == "tool_use"
    (call,) = link.calls
    assert (call.usage.input_tokens, call.usage.output_tokens) == (30, 7)
    gateway.close(link)


def test_the_cache_replays_without_calling_the_provider(gateway: ModelGateway) -> None:
    cache = DictCache()
    with ModelServer([ScriptedReply("first", usage=(5, 1))]) as server:
        route = route_to(server, cache=cache)
        first = gateway.open(route, epoch=0)
        assert chat(first).choices[0].message.content == "first"
        second = gateway.open(route, epoch=0)
        assert chat(second).choices[0].message.content == "first"
        other_epoch = gateway.open(route, epoch=1)
        with pytest.raises(openai.InternalServerError):  # a new sample: the script is used up
            chat(other_epoch)
        assert server.calls == 2
    assert second.calls[0].cached and not first.calls[0].cached
    assert second.calls[0].usage == first.calls[0].usage
    assert route.upstream_calls == 2
    for link in (first, second, other_epoch):
        gateway.close(link)


def test_an_outage_is_an_infra_error_of_the_episode(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply(error=ScriptedError(503))]) as server:
        link = gateway.open(route_to(server), epoch=0)
        with pytest.raises(openai.APIStatusError) as caught:
            chat(link)
    assert caught.value.status_code == 502
    assert link.infra_error is not None and "503" in link.infra_error
    assert link.calls == []
    gateway.close(link)


def test_a_rejected_request_is_passed_back_and_is_the_agents(gateway: ModelGateway) -> None:
    with ModelServer(
        [ScriptedReply(error=ScriptedError(400, message="bad tool schema"))]
    ) as server:
        link = gateway.open(route_to(server), epoch=0)
        with pytest.raises(openai.BadRequestError, match="bad tool schema"):
            chat(link)
    assert link.infra_error is None
    gateway.close(link)


def post(gateway: ModelGateway, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{gateway.base}{path}", timeout=10, **kwargs)


def test_unknown_closed_and_foreign_tokens_are_404(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server), epoch=0)
        body = {"model": "m", "messages": []}
        guessed = episode_urls(gateway.base, "A" * 32)["openai"]
        assert httpx.post(f"{guessed}/chat/completions", json=body).status_code == 404
        gateway.close(link)
        closed = httpx.post(f"{link.urls()['openai']}/chat/completions", json=body)
        assert closed.status_code == 404
        assert server.calls == 0
    for path in ("/", "/v1/chat/completions", f"/e/{link.token}/openai/v1/embeddings", "/e/x"):
        assert post(gateway, path, json=body).status_code == 404


def test_hostile_bodies_get_clean_errors(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server), epoch=0)
        url = f"{link.urls()['openai']}/chat/completions"
        assert httpx.post(url, content=b"{not json").status_code == 400
        assert httpx.post(url, content=b"[1, 2]").status_code == 400
        assert httpx.post(url, json={"messages": []}).status_code == 400  # no model
        assert httpx.post(url, json={"model": "m"}).status_code == 400  # no messages
        big = httpx.post(url, content=b"x" * (65 * 1024))
        assert big.status_code == 413

        def chunks() -> Iterator[bytes]:  # no content-length: the limit counts as it reads
            for _ in range(100):
                yield b"x" * 1024

        assert httpx.post(url, content=chunks()).status_code == 413
        assert httpx.get(url).status_code == 405
        anthropic_url = f"{link.urls()['anthropic']}/v1/messages"
        refused = httpx.post(anthropic_url, content=b"\xff\xfe")
        assert refused.status_code == 400 and refused.json()["type"] == "error"
        assert server.calls == 0
        assert link.calls == [] and link.infra_error is None
    gateway.close(link)


def test_a_slow_client_gets_408_and_blocks_nobody(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply("still served", usage=(1, 1))]) as server:
        link = gateway.open(route_to(server), epoch=0)
        path = f"/e/{link.token}/openai/v1/chat/completions"
        slow = socket.create_connection(("127.0.0.1", int(gateway.base.rsplit(":", 1)[1])))
        slow.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{{".encode())
        answered = threading.Event()
        results: list[Any] = []

        def other() -> None:
            results.append(chat(link).choices[0].message.content)
            answered.set()

        threading.Thread(target=other, daemon=True).start()
        assert answered.wait(10), "a stalled client blocked another call"
        slow.settimeout(10)
        head = slow.recv(200)
        slow.close()
    assert results == ["still served"]
    assert head.startswith(b"HTTP/1.1 408")
    gateway.close(link)


async def test_concurrent_episodes_never_mix(gateway: ModelGateway) -> None:
    def policy(request: Any) -> ScriptedReply:
        return ScriptedReply(f"for {request.messages[-1].content}", usage=(2, 2))

    with ModelServer(policy) as server:
        route = route_to(server)
        links = [gateway.open(route, epoch=0) for _ in range(6)]

        def ask(link: EpisodeLink, text: str) -> str:
            client = openai.OpenAI(base_url=link.urls()["openai"], api_key="x", max_retries=0)
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}]
            )
            client.close()
            return reply.choices[0].message.content or ""

        answers = await asyncio.gather(
            *(asyncio.to_thread(ask, link, f"episode {n}") for n, link in enumerate(links))
        )
    assert answers == [f"for episode {n}" for n in range(6)]
    for n, link in enumerate(links):
        assert [c.request["messages"][0]["content"] for c in link.calls] == [f"episode {n}"]
        gateway.close(link)


def test_the_agent_is_never_handed_the_key(gateway: ModelGateway) -> None:
    with ModelServer([]) as server:
        link = gateway.open(route_to(server), epoch=0)
    handed = " ".join([*link.urls().values(), *link.env("gpt-4o").values(), repr(link.route)])
    assert "secret" not in handed
    assert link.env("gpt-4o")["TOOLPROOF_MODEL"] == "gpt-4o"
    gateway.close(link)


def test_an_unreachable_provider_is_a_502_and_an_infra_error(gateway: ModelGateway) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    route = Route(upstreams={"openai": Upstream("openai", f"http://127.0.0.1:{port}/v1")})
    link = gateway.open(route, epoch=0)
    with pytest.raises(openai.APIStatusError) as caught:
        chat(link)
    assert caught.value.status_code == 502
    assert link.infra_error is not None and "ConnectError" in link.infra_error
    gateway.close(link)


def test_a_garbage_reply_is_the_providers_fault(gateway: ModelGateway) -> None:
    garbage = ScriptedReply(error=ScriptedError(200, body="<html>not json</html>"))
    with ModelServer([garbage]) as server:
        link = gateway.open(route_to(server), epoch=0)
        with pytest.raises(openai.APIStatusError) as caught:
            chat(link)
    assert caught.value.status_code == 502
    assert link.infra_error is not None and "not JSON" in link.infra_error
    gateway.close(link)
