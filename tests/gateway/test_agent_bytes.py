"""Agent bytes and agent choices at the model gateway (invariant 8), over real HTTP.

The official SDKs (or raw sockets, for what no SDK sends) talk to a real gateway on
loopback, with the scripted model server behind it. Every hostile input is fed and its
outcome asserted: a model the run does not allow is refused as the agent's error; a
provider 4xx for what the agent chose is the agent's, never an infra error; a body that
is nested too deep, not UTF-8 or holds a lone surrogate is a JSON 400, never a 500 or a
traceback; one episode's flood of requests or idle connections fails nobody else.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolproof.agents.adapters._via_gateway import gateway_plan
from toolproof.gateway import (
    Counted,
    EpisodeLink,
    ModelGateway,
    Route,
    Upstream,
    json_usage,
    stream_usage,
)
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply
from toolproof.trajectory import Usage

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

RUN_MODEL = "gpt-4o-mini"


@pytest.fixture(scope="module")
def gateway() -> Iterator[ModelGateway]:
    gw = ModelGateway(max_body_bytes=256 * 1024, body_timeout_s=5.0, max_in_flight=2).start()
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


def chat(link: EpisodeLink, model: str = RUN_MODEL) -> Any:
    client = openai.OpenAI(base_url=link.urls()["openai"], api_key="anything", max_retries=0)
    try:
        return client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}]
        )
    finally:
        client.close()


# --- model names ------------------------------------------------------------------------


def test_another_model_is_refused_as_the_agents_error(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server, model=RUN_MODEL), epoch=0)
        with pytest.raises(openai.BadRequestError) as caught:
            chat(link, model="gpt-5-pro-expensive")
        client = anthropic.Anthropic(base_url=link.urls()["anthropic"], api_key="x", max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="allows only 'gpt-4o-mini'"):
            client.messages.create(
                model="claude-opus-4", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        client.close()
        assert server.calls == 0  # the run's key paid for nothing
    assert caught.value.status_code == 400
    assert caught.value.code == "model_not_allowed"
    assert "allows only 'gpt-4o-mini'" in str(caught.value)
    assert "--allow-other-models" in str(caught.value)
    assert link.infra_error is None
    assert [(c.model, c.status) for c in link.calls] == [
        ("gpt-5-pro-expensive", 400),
        ("claude-opus-4", 400),
    ]
    assert all(c.usage == Usage(input_tokens=0, output_tokens=0) for c in link.calls)
    gateway.close(link)


def test_the_runs_model_goes_through(gateway: ModelGateway) -> None:
    with ModelServer([ScriptedReply("ok", usage=(3, 1))]) as server:
        link = gateway.open(route_to(server, model=RUN_MODEL), epoch=0)
        assert chat(link).choices[0].message.content == "ok"
    assert [(c.model, c.status) for c in link.calls] == [(RUN_MODEL, 200)]
    gateway.close(link)


def test_allowed_other_models_are_forwarded_recorded_and_priced_as_named(
    gateway: ModelGateway,
) -> None:
    priced: list[str] = []

    def price(model: str, counted: Any, request_chars: int, reply_chars: int) -> Usage:
        priced.append(model)
        return Usage(input_tokens=5, output_tokens=2, cost_usd=0.25)

    with ModelServer([ScriptedReply("other", usage=(5, 2))]) as server:
        route = route_to(server, model=RUN_MODEL, allow_other_models=True, pricer=price)
        link = gateway.open(route, epoch=0)
        assert chat(link, model="gpt-4.1").choices[0].message.content == "other"
        assert server.requests[0]["model"] == "gpt-4.1"
    assert priced == ["gpt-4.1"]
    assert [(c.model, c.status, c.usage.cost_usd) for c in link.calls] == [("gpt-4.1", 200, 0.25)]
    gateway.close(link)


def real_route(server: ModelServer, **options: Any) -> Route:
    """The route the agent adapters make (the real retry policy and its classification)."""
    given = {"provider": "openai", "base_url": server.base_url, "api_key": "k", **options}
    return gateway_plan(given, "test agent").route


@pytest.mark.parametrize("retrier", ["real", "default"])
def test_a_provider_404_for_a_model_the_agent_chose_is_the_agents(
    gateway: ModelGateway, retrier: str
) -> None:
    missing = ScriptedReply(error=ScriptedError(404, message="The model `gpt-9` does not exist"))
    with ModelServer([missing]) as server:
        route = (
            real_route(server, model=RUN_MODEL, allow_other_models=True)
            if retrier == "real"
            else route_to(server, model=RUN_MODEL, allow_other_models=True)
        )
        link = gateway.open(route, epoch=0)
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            chat(link, model="gpt-9")
    assert link.infra_error is None  # scored: the agent asked for a model that does not exist
    gateway.close(link)


def test_a_provider_404_with_no_model_named_by_the_run_is_the_agents(
    gateway: ModelGateway,
) -> None:
    missing = ScriptedReply(error=ScriptedError(404, message="no such model"))
    with ModelServer([missing]) as server:
        link = gateway.open(real_route(server), epoch=0)  # the agent picks its model
        with pytest.raises(openai.NotFoundError):
            chat(link, model="made-up")
    assert link.infra_error is None
    gateway.close(link)


@pytest.mark.parametrize(
    ("status", "why"),
    [(404, "the run's own --model is unknown"), (401, "the run's key"), (403, "its account")],
)
def test_a_provider_error_about_the_run_is_an_infra_error(
    gateway: ModelGateway, status: int, why: str
) -> None:
    with ModelServer([ScriptedReply(error=ScriptedError(status, message=why))]) as server:
        link = gateway.open(real_route(server, model=RUN_MODEL), epoch=0)
        with pytest.raises(openai.APIStatusError) as caught:
            chat(link)
    assert caught.value.status_code == 502
    assert link.infra_error is not None and str(status) in link.infra_error
    gateway.close(link)


@pytest.mark.parametrize("status", [400, 413, 422])
def test_a_provider_4xx_for_the_agents_request_is_passed_back(
    gateway: ModelGateway, status: int
) -> None:
    with ModelServer([ScriptedReply(error=ScriptedError(status, message="bad body"))]) as server:
        link = gateway.open(real_route(server, model=RUN_MODEL), epoch=0)
        with pytest.raises(openai.APIStatusError) as caught:
            chat(link)
    assert caught.value.status_code == status
    assert link.infra_error is None
    gateway.close(link)


# --- bodies through the ingress ---------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b'{"model": "m", "messages": [' + b"[" * depth + b"]" * depth + b"]}"


HOSTILE_BODIES = {
    "nested 100,000 deep": _nested(100_000),
    "nested 40 deep": _nested(40),
    "not UTF-8": b'{"model": "m", "messages": ["\xff\xfe"]}',
    "a lone surrogate escape": b'{"model": "m", "messages": [{"role": "user", "content": '
    b'"\\udcff"}]}',
    "a lone surrogate in a key": b'{"model": "m", "messages": [], "\\ud800": 1}',
    "NaN": b'{"model": "m", "messages": [], "temperature": NaN}',
    "Infinity": b'{"model": "m", "messages": [], "temperature": -Infinity}',
    "a huge model name": json.dumps({"model": "m" * 5000, "messages": []}).encode(),
    "a model that is not a string": b'{"model": ["m"], "messages": []}',
    "truncated": b'{"model": "m", "messages": [',
    "empty": b"",
    "a bare string": b'"hello"',
}


@pytest.mark.parametrize("name", sorted(HOSTILE_BODIES))
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_hostile_bodies_are_a_json_400_never_a_500_or_a_traceback(
    gateway: ModelGateway, capfd: pytest.CaptureFixture[str], name: str, api: str
) -> None:
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server), epoch=0)
        url = f"{link.urls()[api]}{'/chat/completions' if api == 'openai' else '/v1/messages'}"
        answer = httpx.post(url, content=HOSTILE_BODIES[name], timeout=30)
        assert server.calls == 0
    assert answer.status_code == 400, answer.text
    data = answer.json()
    message = data["error"]["message"]
    assert isinstance(message, str) and message
    if api == "anthropic":
        assert data["type"] == "error"
    assert link.calls == [] and link.infra_error is None
    gateway.close(link)
    assert "Traceback" not in capfd.readouterr().err


def test_a_deep_body_through_the_sdk_is_the_sdks_400(gateway: ModelGateway) -> None:
    deep: Any = "leaf"
    for _ in range(60):
        deep = {"d": deep}
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server), epoch=0)
        client = openai.OpenAI(base_url=link.urls()["openai"], api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="nests deeper"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], extra_body={"x": deep}
            )
        client.close()
    assert link.infra_error is None
    gateway.close(link)


# --- usage through the ingress ----------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "counted"),
    [
        ({"prompt_tokens": 10**15, "completion_tokens": 3}, Counted(0, 3, 0)),
        ({"prompt_tokens": 7.0, "completion_tokens": 2.5}, Counted(7, 0, 0)),
        ({"prompt_tokens": -1, "completion_tokens": 1e400}, Counted(0, 0, 0)),
        (
            {
                "prompt_tokens": 4,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": -9},
            },
            Counted(4, 1, 0),
        ),
    ],
)
def test_absurd_usage_counts_pass_the_ingress_as_zero(
    usage: dict[str, Any], counted: Counted
) -> None:
    assert json_usage("openai", {"usage": usage}) == counted


def test_absurd_anthropic_stream_counts_are_zero() -> None:
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 10**13}}}
    delta = {"type": "message_delta", "usage": {"output_tokens": -4}}
    text = f"data: {json.dumps(start)}\n\ndata: {json.dumps(delta)}\n\n"
    assert stream_usage("anthropic", text) == Counted(0, 0, 0)


def test_absurd_usage_from_the_provider_is_recorded_as_zero(gateway: ModelGateway) -> None:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10**18, "completion_tokens": 2, "total_tokens": 10**18},
    }
    with ModelServer([ScriptedReply(error=ScriptedError(200, body=json.dumps(body)))]) as server:
        link = gateway.open(route_to(server), epoch=0)
        chat(link)
    (call,) = link.calls
    assert (call.usage.input_tokens, call.usage.output_tokens) == (0, 2)
    gateway.close(link)


# --- bounded per episode ----------------------------------------------------------------


async def test_one_episodes_flood_of_requests_is_refused_and_starves_nobody(
    gateway: ModelGateway,
) -> None:
    def policy(request: Any) -> ScriptedReply:
        slow = request.messages[-1].content == "flood"
        return ScriptedReply("done", usage=(1, 1), latency_s=5.0 if slow else 0.0)

    with ModelServer(policy) as server:
        flooder = gateway.open(route_to(server), epoch=0)
        other = gateway.open(route_to(server), epoch=0)
        url = f"{flooder.urls()['openai']}/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "flood"}]}
        async with httpx.AsyncClient(timeout=30) as client:
            held = [asyncio.ensure_future(client.post(url, json=body)) for _ in range(2)]
            deadline = time.monotonic() + 20
            while server.calls < 2 and time.monotonic() < deadline:  # both in flight upstream
                await asyncio.sleep(0.02)
            extra = await asyncio.gather(*(client.post(url, json=body) for _ in range(4)))
            served = await asyncio.to_thread(chat, other)  # another episode: served at once
            first = await asyncio.gather(*held)
    assert [r.status_code for r in extra] == [429] * 4
    assert "in flight" in extra[0].json()["error"]["message"]
    assert served.choices[0].message.content == "done"
    assert [r.status_code for r in first] == [200, 200]
    assert flooder.infra_error is None and flooder.in_flight == 0
    gateway.close(flooder)
    gateway.close(other)


def _idle_sockets(gateway: ModelGateway, count: int, head: bytes = b"") -> list[socket.socket]:
    port = int(gateway.base.rsplit(":", 1)[1])
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if head:
            sock.sendall(head)
        opened.append(sock)
    return opened


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.0)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_1100_idle_connections_do_not_fail_other_episodes() -> None:
    gw = ModelGateway().start()  # the defaults: 1,024 connections at most
    opened: list[socket.socket] = []
    try:
        with ModelServer([ScriptedReply("served", usage=(1, 1))] * 3) as server:
            link = gw.open(route_to(server), epoch=0)
            opened += _idle_sockets(gw, 1000)
            opened += _idle_sockets(
                gw, 100, head=b"POST /e/x/openai/v1/chat/completions HTTP/1.1\r\n"
            )
            answers = [chat(link).choices[0].message.content for _ in range(3)]
            time.sleep(0.2)
            evicted = sum(_closed_by_server(s) for s in opened)
        assert answers == ["served"] * 3
        assert evicted >= 1100 - 1024  # the oldest idle connections made room
        assert link.infra_error is None
    finally:
        for sock in opened:
            sock.close()
        gw.stop()


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_timeout() -> None:
    gw = ModelGateway(idle_timeout_s=0.3).start()
    try:
        (sock,) = _idle_sockets(gw, 1)
        sock.settimeout(20)
        assert sock.recv(1) == b""  # closed by the gateway, not by the test's timeout
        sock.close()
    finally:
        gw.stop()


@pytest.mark.parametrize(
    "garbage",
    [
        b"GARBAGE\r\n\r\n",
        b"POST /e/x/openai/v1/chat/completions HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"POST /e/x HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"a" * 100_000 + b"\r\n\r\n",
        b"\x00\xff\xfe\r\n\r\n",
    ],
)
def test_garbage_on_the_wire_gets_a_400_and_no_output(
    gateway: ModelGateway, capfd: pytest.CaptureFixture[str], garbage: bytes
) -> None:
    port = int(gateway.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(garbage)
            head = sock.recv(100)
        except ConnectionResetError:  # the gateway may close before reading it all
            head = b""
    assert head == b"" or head.startswith(b"HTTP/1.1 4")
    with ModelServer([ScriptedReply("still served", usage=(1, 1))]) as server:
        link = gateway.open(route_to(server), epoch=0)
        assert chat(link).choices[0].message.content == "still served"
        gateway.close(link)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Invalid HTTP" not in err


@pytest.mark.parametrize(
    "value", [b"2023-06-01\xe9", b"2023-06-01\x01", b"v" * 60_000, b"\xff\xfe\xfd"]
)
@pytest.mark.parametrize("name", [b"anthropic-version", b"anthropic-beta"])
def test_a_forwarded_header_the_provider_cannot_take_is_the_agents_400(
    gateway: ModelGateway, capfd: pytest.CaptureFixture[str], name: bytes, value: bytes
) -> None:
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server), epoch=0)
        body = json.dumps(
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        port = int(gateway.base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                f"POST /e/{link.token}/anthropic/v1/messages HTTP/1.1\r\nHost: x\r\n".encode()
                + name + b": " + value + b"\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )  # fmt: skip
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert server.calls == 0
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"printable ASCII" in answer
    assert link.infra_error is None
    gateway.close(link)
    assert "Traceback" not in capfd.readouterr().err


def test_a_flood_of_large_refused_requests_keeps_only_digests(gateway: ModelGateway) -> None:
    from toolproof.gateway._link import RequestDigest

    big = "x" * (200 * 1024)
    with ModelServer([ScriptedReply("never")]) as server:
        link = gateway.open(route_to(server, model=RUN_MODEL), epoch=0)
        url = f"{link.urls()['openai']}/chat/completions"
        body = {"model": "other", "messages": [{"role": "user", "content": big}]}
        with httpx.Client(timeout=30) as client:
            statuses = {client.post(url, json=body).status_code for _ in range(100)}
        assert server.calls == 0
    assert statuses == {400}
    assert len(link.calls) == 100
    assert all(isinstance(c.request, RequestDigest) for c in link.calls)  # no 20 MB kept
    assert link.calls[0].summary()["request_messages"] == 1
    gateway.close(link)


def test_older_calls_keep_their_summary_and_drop_their_body(gateway: ModelGateway) -> None:
    from toolproof.gateway._link import KEEP_WHOLE, RequestDigest

    with ModelServer(lambda request: ScriptedReply("ok", usage=(1, 1))) as server:
        seen: list[dict[str, Any]] = []
        link = gateway.open(route_to(server), epoch=0, sink=lambda c: seen.append(c.summary()))
        for _ in range(KEEP_WHOLE + 4):
            chat(link)
    assert [isinstance(c.request, RequestDigest) for c in link.calls] == [True] * 4 + [
        False
    ] * KEEP_WHOLE
    assert [c.summary() for c in link.calls] == seen  # the trajectory's record is unchanged
    gateway.close(link)
