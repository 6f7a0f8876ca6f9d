"""The egress proxy over loopback, through the live tools: allowlist, limits, secrets, replay."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.live import Cassette, EgressProxy, TaskAccess
from toolproof.spec import WorldSpec
from toolproof.spec.live import LiveSpec
from toolproof.tools import ToolContext, ToolError
from toolproof.tools.toolkits.live import LiveInfraError, http_get, http_send, use_egress
from toolproof.worlds import World

from .upstream import HOST, SECRET, Upstream

SPEC = LiveSpec(
    hosts=[HOST],
    methods=["GET"],
    max_requests=50,
    max_response_bytes=2000,
    max_request_bytes=100,
    secrets=[{"env": "TEST_KEY", "host": HOST, "header": "X-Api-Key"}],
)


def context(task_id: str = "t1", key: str = "t1/0") -> ToolContext:
    """A tool context whose task is ``task_id`` (the proxy's key to its allowlist)."""
    instance: Any = SimpleNamespace(task=SimpleNamespace(id=task_id), key=key)
    return ToolContext(world=World(WorldSpec()), instance=instance)


@pytest.fixture
def proxy(upstream: Upstream, tmp_path: Path) -> Iterator[EgressProxy]:
    """A recording proxy for task t1 (secret TEST_KEY), its host mapped to the upstream."""
    access = {"t1": TaskAccess(SPEC, {"TEST_KEY": SECRET})}
    with (
        EgressProxy(
            access, mode="record", record_to=tmp_path / "c.yaml", resolver=upstream.resolver
        ) as started,
        use_egress(started.url, started.token),
    ):
        yield started


def body(result: dict[str, Any]) -> Any:
    """The parsed body of a tool result."""
    return result["body"]


def test_an_allowed_get_reaches_the_service(proxy: EgressProxy, upstream: Upstream) -> None:
    result = http_get(context(), f"http://{HOST}/data")
    assert (result["status"], body(result)["value"]) == (200, "blue")
    assert upstream.hits == [f"GET {HOST} /data"]


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example.net/data",
        "http://localhost/data",
        "http://127.0.0.1/data",
        f"http://{HOST}@127.0.0.1/data",
        "http://2130706433/data",
        f"http://{HOST}:8080/data",
        f"http://{HOST}\\@127.0.0.1/data",
    ],
)
def test_off_list_hosts_are_refused_and_never_reached(
    proxy: EgressProxy, upstream: Upstream, url: str
) -> None:
    with pytest.raises(ToolError, match="refused by the egress proxy"):
        http_get(context(), url)
    assert upstream.hits == []
    assert proxy.log[-1]["outcome"].startswith("refused")


def test_another_method_is_refused(proxy: EgressProxy, upstream: Upstream) -> None:
    with pytest.raises(ToolError, match=r"HTTP 405 refused.*method POST is not allowed"):
        http_send(context(), "POST", f"http://{HOST}/data", body={"a": 1})
    assert upstream.hits == []


def test_a_redirect_off_the_list_is_refused_and_one_on_it_followed(
    proxy: EgressProxy, upstream: Upstream
) -> None:
    with pytest.raises(ToolError, match=r"'evil.example.net' is not on"):
        http_get(context(), f"http://{HOST}/to-evil")
    result = http_get(context(), f"http://{HOST}/to-data")
    assert (result["url"], body(result)["value"]) == (f"http://{HOST}/data", "blue")
    assert all(HOST in hit for hit in upstream.hits)


def test_oversize_bodies_are_refused_both_ways(proxy: EgressProxy) -> None:
    open_spec = SPEC.model_copy(update={"methods": ["GET", "POST"]})
    proxy.access["t1"] = TaskAccess(open_spec, {"TEST_KEY": SECRET})
    with pytest.raises(ToolError, match=r"HTTP 413 refused.*over the limit of 100"):
        http_send(context(), "POST", f"http://{HOST}/data", body="y" * 500)
    with pytest.raises(ToolError, match=r"HTTP 413 refused.*over the limit of 100"):
        http_send(context(), "POST", f"http://{HOST}/data", body="z" * 3_000_000)
    with pytest.raises(ToolError, match="at most 16777216 can be sent"):
        http_send(context(), "POST", f"http://{HOST}/data", body="z" * 17_000_000)
    with pytest.raises(ToolError, match="response is over the limit of 2000 bytes"):
        http_get(context(), f"http://{HOST}/big")


def test_the_rate_limit_counts_per_episode(proxy: EgressProxy) -> None:
    proxy.access["t1"] = TaskAccess(
        SPEC.model_copy(update={"max_requests": 2}), {"TEST_KEY": SECRET}
    )
    http_get(context(key="t1/0"), f"http://{HOST}/data")
    http_get(context(key="t1/0"), f"http://{HOST}/data")
    with pytest.raises(ToolError, match=r"HTTP 429 refused.*2 per episode"):
        http_get(context(key="t1/0"), f"http://{HOST}/data")
    assert http_get(context(key="t1/1"), f"http://{HOST}/data")["status"] == 200
    proxy.access["t1"] = TaskAccess(
        SPEC.model_copy(update={"requests_per_minute": 1}), {"TEST_KEY": SECRET}
    )
    http_get(context(key="t1/2"), f"http://{HOST}/data")
    with pytest.raises(ToolError, match="1 requests per minute"):
        http_get(context(key="t1/2"), f"http://{HOST}/data")


def test_the_secret_is_injected_and_scrubbed_from_what_comes_back(
    proxy: EgressProxy, tmp_path: Path
) -> None:
    assert body(http_get(context(), f"http://{HOST}/needs-key"))["auth_ok"] is True
    echoed = http_get(context(), f"http://{HOST}/echo")
    assert body(echoed)["headers"]["X-Api-Key"] == "<redacted>"
    assert SECRET not in json.dumps(echoed)
    assert not any(k.lower().startswith("x-toolproof") for k in body(echoed)["headers"])
    proxy.close()
    recorded = (tmp_path / "c.yaml").read_text(encoding="utf-8")
    assert SECRET not in recorded and "needs-key" in recorded


def test_a_secret_in_the_query_is_injected_and_dropped_from_the_key(
    upstream: Upstream, tmp_path: Path
) -> None:
    spec = LiveSpec(hosts=[HOST], secrets=[{"env": "K", "host": HOST, "query": "key"}])
    access = {"t1": TaskAccess(spec, {"K": SECRET})}
    with (
        EgressProxy(access, mode="record", resolver=upstream.resolver) as started,
        use_egress(started.url, started.token),
    ):
        got = http_get(context(), f"http://{HOST}/needs-key?key=guess")
    assert body(got)["auth_ok"] is True
    assert SECRET not in json.dumps(started.log) + json.dumps(got)
    assert started.log[-1]["url"] == f"http://{HOST}/needs-key"


def test_agents_cannot_set_harness_headers(proxy: EgressProxy) -> None:
    for name in ("X-Toolproof-Task", "x-toolproof-token", "Host", "Proxy-Authorization"):
        with pytest.raises(ToolError, match="set by the harness"):
            http_send(context(), "GET", f"http://{HOST}/data", headers={name: "t2"})
    with pytest.raises(ToolError, match="values one line"):
        http_send(context(), "GET", f"http://{HOST}/data", headers={"X-A": "1\r\nX-B: 2"})
    with pytest.raises(ToolError, match="absolute http"):
        http_get(context(), f"http://{HOST}/data\r\nHost: evil")
    with pytest.raises(ToolError, match="HTTP 404"):  # sent percent-encoded: the service's 404
        http_get(context(), f"http://{HOST}/dätä")


def test_the_proxy_answers_only_its_own_tools(proxy: EgressProxy) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=30)
    conn.request("GET", f"http://{HOST}/data")  # no token: another local process
    assert conn.getresponse().status == 407
    conn.close()
    with pytest.raises(ToolError, match="not a live task of this run"):
        http_get(context(task_id="other"), f"http://{HOST}/data")


@pytest.mark.parametrize(
    ("method", "target", "length", "status"),
    [
        ("CONNECT", f"{HOST}:443", "0", 501),
        ("GET", "/data", "0", 403),
        ("POST", f"http://{HOST}/data", "-5", 413),
        ("POST", f"http://{HOST}/data", "ten", 413),
        ("POST", f"http://{HOST}/data", str(10**12), 413),
    ],
)
def test_raw_hostile_requests_to_the_proxy_are_refused(
    proxy: EgressProxy, upstream: Upstream, method: str, target: str, length: str, status: int
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=30)
    conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    conn.putheader("X-Toolproof-Token", proxy.token)
    conn.putheader("X-Toolproof-Task", "t1")
    conn.putheader("Content-Length", length)
    conn.endheaders()
    assert conn.getresponse().status == status
    conn.close()
    assert upstream.hits == []


def test_a_replay_miss_is_the_agents_tool_error_naming_the_request(upstream: Upstream) -> None:
    proxy = EgressProxy({"t1": TaskAccess(SPEC, {})}, mode="replay", cassette=Cassette())
    with (
        proxy as started,
        use_egress(started.url, started.token),
        pytest.raises(ToolError) as info,
    ):
        http_get(context(), f"http://{HOST}/data?b=2&a=1")
    assert str(info.value).startswith("HTTP 404 not recorded: ")
    assert f"replay miss: GET http://{HOST}/data?a=1&b=2" in str(info.value)
    assert "was not recorded" in str(info.value)
    assert started.log[-1]["outcome"].startswith("replay miss")
    assert upstream.hits == []


def test_live_tools_without_a_proxy_say_how_to_get_one() -> None:
    with pytest.raises(LiveInfraError, match="no egress proxy is running"):
        http_get(context(), f"http://{HOST}/data")
