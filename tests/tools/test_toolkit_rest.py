"""The REST toolkit: routes, status codes, pagination, validation, locking, comments_added."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.spec import WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits.rest import comments_added
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World

TOOLS = ["http_request", "api_get_item", "api_list_items"]


def ticket(n: int, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": f"Ticket {n}",
        "status": status,
        "priority": "normal",
        "requester": "U1",
        "version": 1,
        "comments": [],
        **extra,
    }


@pytest.fixture
def world() -> World:
    tickets = {f"T-{n}": ticket(n, "open" if n % 2 else "closed") for n in range(1, 8)}
    tickets["T-3"]["title"] = "Login fails"
    return World(
        WorldSpec(
            records={
                "api": {
                    "tickets": tickets,
                    "users": {
                        "U1": {"name": "Sam", "email": "sam@x.test"},
                        "U2": {"name": "Kim", "email": "kim@x.test"},
                    },
                    "notes": {"a": {"text": "no numbers"}},
                },
                "api_meta": {
                    "per_page": 3,
                    "max_per_page": 5,
                    "collections": {
                        "tickets": {
                            "required": ["title", "requester"],
                            "enums": {"status": ["open", "closed"]},
                            "readonly": ["requester"],
                            "refs": {"requester": "users"},
                        },
                        "users": {
                            "required": ["name", "email"],
                            "unique": ["email"],
                            "versioned": True,
                            "id_prefix": "U",
                        },
                    },
                },
            }
        )
    )


async def call(world: World, tool: str, /, **arguments: Any) -> ToolResult:
    load_builtin()
    gateway = ToolGateway([registry()[n] for n in TOOLS], ToolContext(world=world))
    return await gateway.call(ToolCall(id="c", name=tool, arguments=arguments))


async def ok(world: World, tool: str, /, **arguments: Any) -> Any:
    result = await call(world, tool, **arguments)
    assert not result.is_error, result.content
    return json.loads(result.content)


async def http(world: World, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    args: dict[str, Any] = {"method": method, "path": path}
    if body is not None:
        args["body"] = body
    return await ok(world, "http_request", **args)


async def fails(world: World, method: str, path: str, body: dict[str, Any] | None = None) -> str:
    args: dict[str, Any] = {"method": method, "path": path}
    if body is not None:
        args["body"] = body
    result = await call(world, "http_request", **args)
    assert result.is_error, result.content
    return result.content


async def test_index_and_pages(world: World) -> None:
    index = (await http(world, "GET", "/"))["body"]["collections"]
    assert index["tickets"]["items"] == 7 and index["users"]["unique"] == ["email"]
    first = (await http(world, "get", "/tickets"))["body"]
    assert [t["id"] for t in first["items"]] == ["T-1", "T-2", "T-3"]
    assert (first["total"], first["next_page"]) == (7, 2)
    last = (await http(world, "GET", "/tickets?page=3"))["body"]
    assert [t["id"] for t in last["items"]] == ["T-7"] and last["next_page"] is None
    open_ = (await http(world, "GET", "/tickets?status=OPEN&per_page=5&sort=-id"))["body"]
    assert open_["total"] == 4 and open_["items"][0]["id"] == "T-7"
    assert (await http(world, "GET", "/tickets?q=login"))["body"]["items"][0]["id"] == "T-3"
    assert "HTTP 422" in await fails(world, "GET", "/tickets?colour=red")
    assert "HTTP 422" in await fails(world, "GET", "/tickets?sort=colour")
    assert "HTTP 400" in await fails(world, "GET", "/tickets?per_page=9")
    assert "HTTP 400" in await fails(world, "GET", "/tickets?page=x")


async def test_items_and_errors(world: World) -> None:
    assert (await http(world, "GET", "/tickets/T-2"))["body"]["status"] == "closed"
    assert "HTTP 404 Not Found: no tickets item 'T-99'" in await fails(
        world, "GET", "/tickets/T-99"
    )
    assert "HTTP 404 Not Found: no route /nope; collections: notes, tickets, users" in await fails(
        world, "GET", "/nope"
    )
    assert "HTTP 404" in await fails(world, "GET", "/a/b/c/d")
    assert "HTTP 405" in await fails(world, "TRACE", "/tickets")
    assert "HTTP 405" in await fails(world, "DELETE", "/tickets")
    assert "HTTP 405" in await fails(world, "POST", "/tickets/T-1")
    assert "HTTP 405" in await fails(world, "POST", "/")
    assert "HTTP 400" in await fails(world, "GET", "tickets")


async def test_create_validates_and_numbers(world: World) -> None:
    made = await http(world, "POST", "/tickets", {"title": "New", "requester": "U2"})
    assert made == {"status": 201, "body": {"id": "T-8", "title": "New", "requester": "U2"}}
    assert "requester is required" in await fails(world, "POST", "/tickets", {"title": "x"})
    assert "requester 'kim@x.test' is not an id in /users" in await fails(
        world, "POST", "/tickets", {"title": "x", "requester": "kim@x.test"}
    )
    assert "status must be one of open, closed" in await fails(
        world, "POST", "/tickets", {"title": "x", "requester": "U1", "status": "done"}
    )
    assert "read-only fields: id" in await fails(
        world, "POST", "/tickets", {"id": "T-1", "title": "x", "requester": "U1"}
    )
    user = await http(world, "POST", "/users", {"name": "Lee", "email": "lee@x.test"})
    assert user["body"]["id"] == "U3" and user["body"]["version"] == 1
    assert "HTTP 409 Conflict: users item U1 already has email" in await fails(
        world, "POST", "/users", {"name": "Sam 2", "email": "SAM@x.test"}
    )
    note = await http(world, "POST", "/notes", {"text": "n"})
    assert note["body"]["id"] == "2"


async def test_changes_with_optimistic_locking(world: World) -> None:
    patched = await http(world, "PATCH", "/tickets/T-1", {"status": "closed"})
    assert patched["body"]["status"] == "closed" and patched["body"]["version"] == 2
    assert "version conflict: the item is at version 2, you sent 1" in await fails(
        world, "PATCH", "/tickets/T-1", {"status": "open", "version": 1}
    )
    assert (await http(world, "PATCH", "/tickets/T-1", {"status": "open", "version": 2}))["body"][
        "version"
    ] == 3

    assert "read-only fields: requester" in await fails(
        world, "PATCH", "/tickets/T-1", {"requester": "U2"}
    )
    same = await http(world, "PATCH", "/tickets/T-1", {"requester": "U1", "priority": "high"})
    assert same["body"]["priority"] == "high" and same["body"]["requester"] == "U1"
    # users are versioned: a change must say which version it saw
    world.records["api"]["users"]["U1"]["version"] = 5
    assert "HTTP 428" in await fails(world, "PATCH", "/users/U1", {"name": "Samuel"})
    assert "HTTP 409" in await fails(
        world, "PATCH", "/users/U1", {"email": "kim@x.test", "version": 5}
    )
    replaced = await http(world, "PUT", "/tickets/T-2", {"title": "Replaced"})
    assert replaced["body"] == {"id": "T-2", "title": "Replaced", "requester": "U1", "version": 2}
    assert "title is required" in await fails(world, "PUT", "/tickets/T-4", {"status": "open"})
    assert await http(world, "DELETE", "/tickets/T-6") == {"status": 204, "body": None}
    assert "T-6" not in world.records["api"]["tickets"]


async def test_list_fields(world: World) -> None:
    added = await http(world, "POST", "/tickets/T-1/comments", {"author": "U2", "text": "On it"})
    assert added["status"] == 201 and added["body"]["total"] == 1
    assert world.records["api"]["tickets"]["T-1"]["version"] == 2
    assert (await http(world, "GET", "/tickets/T-1/comments"))["body"]["items"][0][
        "text"
    ] == "On it"
    assert "body must not be empty" in await fails(world, "POST", "/tickets/T-1/comments", {})
    assert "HTTP 405" in await fails(world, "DELETE", "/tickets/T-1/comments")
    assert "HTTP 404" in await fails(world, "GET", "/tickets/T-1/title")


async def test_typed_endpoints(world: World) -> None:
    assert (await ok(world, "api_get_item", collection="users", item_id="U2"))["name"] == "Kim"
    page = await ok(
        world,
        "api_list_items",
        collection="tickets",
        filters={"status": "closed"},
        page=1,
        per_page=2,
    )
    assert [t["id"] for t in page["items"]] == ["T-2", "T-4"] and page["next_page"] == 2
    result = await call(world, "api_get_item", collection="tickets", item_id="T-0")
    assert result.is_error and "HTTP 404" in result.content


async def test_comments_added_check(world: World) -> None:
    initial = world.snapshot()
    await http(world, "POST", "/tickets/T-1/comments", {"author": "U2", "text": "Stale: confirm?"})
    await http(world, "POST", "/tickets/T-3/comments", {"author": "U2", "text": "other"})
    ctx = SimpleNamespace(initial=initial, final=world.snapshot())
    assert comments_added(ctx, "stale", ["T-1", ""])[0]
    passed, detail = comments_added(ctx, "stale", ["T-1", "T-5"])
    assert not passed and "missing on ['T-5']" in detail
    passed, detail = comments_added(ctx, "other", [])
    assert not passed and "unexpected on ['T-3']" in detail
