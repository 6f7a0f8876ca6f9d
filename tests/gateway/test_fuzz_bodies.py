"""Generated request bodies at the model gateway: never a 500, never an infra error.

Hypothesis (seeded, a fixed budget scaled by ``TOOLPROOF_FUZZ_EXAMPLES``) sends bytes and
JSON-like values of any shape, nesting and Unicode (lone surrogates included, as JSON
escapes) to a real gateway on loopback, the scripted model server behind it. Whatever the
agent sends is answered with a 200 (forwarded) or a 4xx in the API's error shape, and the
episode is never marked an infra error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.gateway import ModelGateway, Route, Upstream
from toolproof.testing import ModelServer, ScriptedReply

FUZZ = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "0") or 0)

leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=30,
)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[ModelGateway, ModelServer, Any]]:
    with ModelServer(lambda request: ScriptedReply("ok", usage=(1, 1))) as server:
        gateway = ModelGateway(max_body_bytes=256 * 1024).start()
        route = Route(
            upstreams={
                "openai": Upstream("openai", server.base_url, "k"),
                "anthropic": Upstream("anthropic", server.anthropic_base_url, "k"),
            }
        )
        link = gateway.open(route, epoch=0)
        yield gateway, server, link
        gateway.close(link)
        gateway.stop()


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def _post(link: Any, api: str, content: bytes) -> httpx.Response:
    path = "/chat/completions" if api == "openai" else "/v1/messages"
    return httpx.post(f"{link.urls()[api]}{path}", content=content, timeout=30)


@settings(
    max_examples=max(FUZZ, 60),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    api=st.sampled_from(["openai", "anthropic"]),
    extra=values,
    depth=st.integers(0, 80),
    content=values,
)
def test_generated_bodies_are_forwarded_or_refused_never_500(
    endpoint: tuple[ModelGateway, ModelServer, Any], api: str, extra: Any, depth: int, content: Any
) -> None:
    _, _, link = endpoint
    body = {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": _nest(content, depth)}],
        "metadata": extra,
    }
    raw = json.dumps(body, ensure_ascii=True, allow_nan=True).encode()  # NaN, \udcff escapes
    answer = _post(link, api, raw)
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 400:
        shaped = answer.json()
        assert isinstance(shaped["error"]["message"], str)
    assert link.infra_error is None


@settings(
    max_examples=max(FUZZ, 60),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(api=st.sampled_from(["openai", "anthropic"]), raw=st.binary(max_size=512))
def test_generated_bytes_are_refused_with_a_json_400(
    endpoint: tuple[ModelGateway, ModelServer, Any], api: str, raw: bytes
) -> None:
    _, _, link = endpoint
    answer = _post(link, api, raw)
    assert answer.status_code == 400, answer.text
    assert isinstance(answer.json()["error"]["message"], str)
    assert link.infra_error is None
