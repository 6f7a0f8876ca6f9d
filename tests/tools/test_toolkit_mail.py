"""The mail toolkit: folders, search, sending, replies, forwards, contacts, and sent_email."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.spec import WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits.mail import sent_email
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World

TOOLS = [
    "list_emails",
    "read_email",
    "search_emails",
    "send_email",
    "reply_email",
    "forward_email",
    "archive_email",
    "delete_email",
    "find_contact",
    "list_contacts",
    "add_contact",
]


@pytest.fixture
def world() -> World:
    return World(
        WorldSpec(
            records={
                "today": "2026-03-02",
                "mailbox": {"address": "me@acme.test"},
                "contacts": {
                    "CT1": {
                        "name": "Dana Reyes",
                        "email": "dana@northwind.test",
                        "company": "Northwind",
                    },
                    "CT2": {"name": "Lena Fischer", "email": "lena@acme.test", "company": "Acme"},
                },
                "emails": {
                    "M1": {
                        "from": "lena@acme.test",
                        "to": ["me@acme.test", "kim@acme.test"],
                        "cc": ["boss@acme.test"],
                        "subject": "Offsite",
                        "body": "Option A or B?",
                        "date": "2026-03-01",
                        "read": False,
                    },
                    "M2": {
                        "from": "billing@cloud.test",
                        "to": ["me@acme.test"],
                        "subject": "Re: Invoice 7",
                        "body": "Amount due: 120.00",
                        "date": "2026-02-27",
                        "read": True,
                    },
                    "M3": {
                        "from": "news@shop.test",
                        "to": ["me@acme.test"],
                        "subject": "Deals",
                        "body": "Unsubscribe here",
                        "date": "2026-01-02",
                        "read": True,
                        "folder": "archive",
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


async def error(world: World, tool: str, /, **arguments: Any) -> str:
    result = await call(world, tool, **arguments)
    assert result.is_error, result.content
    return result.content


async def test_list_emails_by_folder_newest_first(world: World) -> None:
    inbox = await ok(world, "list_emails")
    assert [m["email_id"] for m in inbox] == ["M1", "M2"]
    assert "body" not in inbox[0]
    assert [m["email_id"] for m in await ok(world, "list_emails", unread_only=True)] == ["M1"]
    assert [m["email_id"] for m in await ok(world, "list_emails", folder="archive")] == ["M3"]
    assert await ok(world, "list_emails", folder="sent") == []
    assert "no folder 'spam'" in await error(world, "list_emails", folder="spam")


async def test_read_and_search_never_mark_anything(world: World) -> None:
    before = world.records_digest()
    assert (await ok(world, "read_email", email_id="M1"))["body"] == "Option A or B?"
    assert "no email with id 'M9'" in await error(world, "read_email", email_id="M9")
    assert [m["email_id"] for m in await ok(world, "search_emails", query="UNSUBSCRIBE")] == ["M3"]
    assert await ok(world, "search_emails", query="unsubscribe", folder="inbox") == []
    assert "must not be empty" in await error(world, "search_emails", query="  ")
    world.touch()
    assert world.records_digest() == before


async def test_send_email_validates_addresses(world: World) -> None:
    sent = await ok(
        world,
        "send_email",
        to=["dana@northwind.test"],
        subject="Hi",
        body="Hello",
        cc=["lena@acme.test"],
    )
    assert sent["sent_id"] == "S1" and sent["date"] == "2026-03-02"
    assert world.records["sent"]["S1"]["cc"] == ["lena@acme.test"]
    assert "'Dana' is not an email address" in await error(
        world, "send_email", to=["Dana"], subject="Hi", body="x"
    )
    assert "at least one address" in await error(world, "send_email", to=[], subject="Hi", body="x")
    assert "subject must not be empty" in await error(
        world, "send_email", to=["a@b.test"], subject=" ", body="x"
    )


async def test_reply_and_forward(world: World) -> None:
    reply = await ok(world, "reply_email", email_id="M1", body="B.", reply_all=True)
    assert reply["to"] == ["lena@acme.test"] and reply["subject"] == "Re: Offsite"
    assert reply["cc"] == ["kim@acme.test", "boss@acme.test"]  # not my own address
    assert reply["in_reply_to"] == "M1"
    again = await ok(world, "reply_email", email_id="M2", body="Paid.")
    assert again["subject"] == "Re: Invoice 7" and again["cc"] == []
    fwd = await ok(world, "forward_email", email_id="M2", to=["ap@acme.test"], note="Please pay")
    assert fwd["subject"] == "Fwd: Re: Invoice 7" and fwd["forwarded"] == "M2"
    assert fwd["body"].startswith("Please pay\n\n") and "Amount due: 120.00" in fwd["body"]
    assert "at least one address" in await error(world, "forward_email", email_id="M2", to=[])
    assert sorted(world.records["sent"]) == ["S1", "S2", "S3"]


async def test_archive_and_delete_move_between_folders(world: World) -> None:
    assert (await ok(world, "archive_email", email_id="M1"))["folder"] == "archive"
    assert "already archived" in await error(world, "archive_email", email_id="M1")
    assert (await ok(world, "delete_email", email_id="M1"))["folder"] == "trash"
    assert "already in the trash" in await error(world, "delete_email", email_id="M1")
    assert world.records["emails"]["M1"]["folder"] == "trash"


async def test_contacts(world: World) -> None:
    assert [c["contact_id"] for c in await ok(world, "find_contact", query="acme")] == ["CT2"]
    assert len(await ok(world, "list_contacts")) == 2
    added = await ok(world, "add_contact", name="Kim Ode", email="kim@acme.test")
    assert added["contact_id"] == "CT3"
    assert "already contact CT2" in await error(
        world, "add_contact", name="L", email="LENA@acme.test"
    )
    assert "not an email address" in await error(world, "add_contact", name="X", email="x@")
    assert "must not be empty" in await error(world, "find_contact", query="")


async def test_sent_email_check(world: World) -> None:
    initial = world.snapshot()
    ctx = SimpleNamespace(initial=initial, final=world.snapshot())
    assert sent_email(ctx, exactly=0) == (True, "nothing was sent")
    assert sent_email(ctx, to="a@b.test") == (
        False,
        "0 messages sent, expected 1; nothing was sent",
    )
    await ok(
        world, "send_email", to=["dana@northwind.test"], subject="Budget 2026", body="Numbers: 42"
    )
    await ok(world, "reply_email", email_id="M1", body="Option B")
    ctx = SimpleNamespace(initial=initial, final=world.snapshot())
    assert sent_email(ctx, to="DANA@northwind.test", subject="budget", contains=[42], exactly=None)[
        0
    ]
    assert sent_email(ctx, to="lena@acme.test", in_reply_to="M1", exactly=2)[0]
    passed, detail = sent_email(ctx, to="dana@northwind.test")
    assert not passed and detail.startswith("2 messages sent, expected 1")
    passed, detail = sent_email(ctx, to="lena@acme.test", forwarded="M1", exactly=None)
    assert not passed and "forward of M1" in detail
    passed, _ = sent_email(ctx, exactly=0)
    assert not passed
