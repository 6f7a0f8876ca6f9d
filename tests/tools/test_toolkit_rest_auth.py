"""The REST service behind bearer tokens: api_token logs in, api_call needs its token."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolproof.spec import WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits.rest_auth import MAX_TOKENS
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World

TOOLS = ["api_token", "api_call"]


@pytest.fixture
def world() -> World:
    return World(
        WorldSpec(
            records={
                "api": {"products": {"P-1": {"sku": "A", "price": 5.0, "version": 1}}},
                "api_meta": {"per_page": 5, "collections": {"products": {"versioned": True}}},
                "api_auth": {"clients": {"shop": "s3cret-42"}, "tokens": {}},
            }
        )
    )


async def call(world: World, tool: str, /, **arguments: Any) -> ToolResult:
    load_builtin()
    gateway = ToolGateway([registry()[n] for n in TOOLS], ToolContext(world=world))
    return await gateway.call(ToolCall(id="c", name=tool, arguments=arguments))


async def login(world: World) -> str:
    result = await call(world, "api_token", client_id="shop", client_secret="s3cret-42")
    assert not result.is_error, result.content
    token = json.loads(result.content)["access_token"]
    assert isinstance(token, str) and token.startswith("tk_")
    return token


async def test_a_token_opens_the_api_and_changes_go_through(world: World) -> None:
    token = await login(world)
    listed = await call(world, "api_call", token=token, method="GET", path="/products")
    assert json.loads(listed.content)["body"]["total"] == 1
    patched = await call(
        world,
        "api_call",
        token=token,
        method="PATCH",
        path="/products/P-1",
        body={"price": 7.5, "version": 1},
    )
    assert not patched.is_error, patched.content
    assert world.records["api"]["products"]["P-1"] == {"sku": "A", "price": 7.5, "version": 2}
    assert world.records["api_auth"]["tokens"] == {token: "shop"}


@pytest.mark.parametrize(
    "token", ["", "tk_000000000000000000000000", "s3cret-42", "shop", "tk_' OR 1=1 --"]
)
async def test_no_forged_or_missing_token_gets_in(world: World, token: str) -> None:
    await login(world)  # a real token exists, but not the one sent
    result = await call(world, "api_call", token=token, method="DELETE", path="/products/P-1")
    assert result.is_error
    assert "HTTP 401" in result.content and "api_token" in result.content
    assert "P-1" in world.records["api"]["products"]


@pytest.mark.parametrize(
    ("client", "secret"),
    [("shop", "bad-1"), ("shop", ""), ("other", "s3cret-42"), ("", ""), ("shop", "s3cret-42 ")],
)
async def test_a_wrong_login_is_refused_and_issues_nothing(
    world: World, client: str, secret: str
) -> None:
    result = await call(world, "api_token", client_id=client, client_secret=secret)
    assert result.is_error
    assert "HTTP 401" in result.content
    assert "s3cret" not in result.content and (not secret or secret not in result.content)
    assert world.records["api_auth"]["tokens"] == {}


async def test_tokens_are_reproducible_distinct_and_bounded(world: World) -> None:
    first, second = await login(world), await login(world)
    assert first != second
    again = World(WorldSpec(records={"api_auth": {"clients": {"shop": "s3cret-42"}}}))
    assert await login(again) == first  # no clock, no randomness: the same run, the same token
    for _ in range(MAX_TOKENS - 2):
        await login(world)
    refused = await call(world, "api_token", client_id="shop", client_secret="s3cret-42")
    assert refused.is_error and "HTTP 429" in refused.content
    assert len(world.records["api_auth"]["tokens"]) == MAX_TOKENS


async def test_a_world_without_auth_says_so(world: World) -> None:
    bare = World(WorldSpec(records={"api": {}}))
    result = await call(bare, "api_call", token="x", method="GET", path="/")
    assert result.is_error and "no authentication" in result.content
