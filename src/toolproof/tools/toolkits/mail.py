"""A mailbox and its address book, kept in the records.

Record layout::

    mailbox:  {address, name}                     # whose mailbox this is (optional)
    contacts: {ID: {name, email, company, phone}}
    emails:   {ID: {from, to, cc, subject, body, date, folder, read}}  # received; folder inbox,
                                                                       # archive or trash
    sent:     {ID: {to, cc, subject, body, date, in_reply_to, forwarded}}  # what the agent sent

Sending, replying and forwarding add ``sent.S<n>`` (the first free number from
the count plus one). Reading never marks a message read, so looking around
leaves no trace in the state. :func:`sent_email` is a custom check for tasks:
``{kind: custom, function: "toolproof.tools.toolkits.mail:sent_email", args: {...}}``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool

_ADDRESS = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
_FOLDERS = ("inbox", "archive", "trash", "sent")
DEFAULT_DATE = "2026-03-02"


def _table(ctx: ToolContext, name: str) -> dict[str, Any]:
    table = ctx.world.records.setdefault(name, {})
    assert isinstance(table, dict)
    return table


def _email(ctx: ToolContext, email_id: str) -> dict[str, Any]:
    emails = _table(ctx, "emails")
    if email_id not in emails:
        raise ToolError(f"no email with id {email_id!r}; list_emails or search_emails show the ids")
    item = emails[email_id]
    assert isinstance(item, dict)
    return item


def _addresses(values: Sequence[str], field: str) -> list[str]:
    out = []
    for value in values:
        address = value.strip()
        if not _ADDRESS.match(address):
            raise ToolError(
                f"{field}: {value!r} is not an email address; look it up with find_contact"
            )
        out.append(address)
    return out


def _next_id(table: dict[str, Any], prefix: str) -> str:
    number = len(table) + 1
    while f"{prefix}{number}" in table:
        number += 1
    return f"{prefix}{number}"


def _today(ctx: ToolContext) -> str:
    return str(ctx.world.records.get("today", DEFAULT_DATE))


def _summary(email_id: str, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "email_id": email_id,
        "from": item.get("from"),
        "subject": item.get("subject", ""),
        "date": item.get("date", ""),
        "read": bool(item.get("read", False)),
    }


def _store_sent(ctx: ToolContext, message: dict[str, Any]) -> dict[str, Any]:
    sent = _table(ctx, "sent")
    sent_id = _next_id(sent, "S")
    sent[sent_id] = {"date": _today(ctx), **message}
    return {"sent_id": sent_id, **sent[sent_id]}


@tool(kind=ToolKind.READ)
def list_emails(
    ctx: ToolContext, folder: str = "inbox", unread_only: bool = False
) -> list[dict[str, Any]]:
    """List the messages in a folder, newest first (without their bodies; use read_email).

    Args:
        folder: inbox, archive, trash or sent.
        unread_only: Only unread messages.
    """
    if folder not in _FOLDERS:
        raise ToolError(f"no folder {folder!r}; folders: {', '.join(_FOLDERS)}")
    if folder == "sent":
        return [
            {
                "sent_id": sid,
                "to": m.get("to", []),
                "subject": m.get("subject", ""),
                "date": m.get("date"),
            }
            for sid, m in sorted(
                _table(ctx, "sent").items(), key=lambda p: str(p[1].get("date")), reverse=True
            )
        ]
    rows = [
        _summary(eid, m)
        for eid, m in _table(ctx, "emails").items()
        if m.get("folder", "inbox") == folder and not (unread_only and m.get("read", False))
    ]
    return sorted(rows, key=lambda r: (str(r["date"]), r["email_id"]), reverse=True)


@tool(kind=ToolKind.READ)
def read_email(ctx: ToolContext, email_id: str) -> dict[str, Any]:
    """Return a received message in full: sender, recipients, subject, date and body.

    Args:
        email_id: The message id, e.g. "M4".
    """
    item = _email(ctx, email_id)
    return {
        "email_id": email_id,
        "from": item.get("from"),
        "to": item.get("to", []),
        "cc": item.get("cc", []),
        "subject": item.get("subject", ""),
        "date": item.get("date", ""),
        "folder": item.get("folder", "inbox"),
        "body": item.get("body", ""),
    }


@tool(kind=ToolKind.READ)
def search_emails(ctx: ToolContext, query: str, folder: str | None = None) -> list[dict[str, Any]]:
    """Find received messages whose sender, subject or body contains the text (any case).

    Args:
        query: Text to look for, e.g. "invoice".
        folder: Only this folder (inbox, archive or trash); all folders by default.
    """
    needle = query.strip().lower()
    if not needle:
        raise ToolError("query must not be empty")
    hits = []
    for eid, item in _table(ctx, "emails").items():
        if folder is not None and item.get("folder", "inbox") != folder:
            continue
        text = " ".join(str(item.get(k, "")) for k in ("from", "subject", "body")).lower()
        if needle in text:
            hits.append({**_summary(eid, item), "folder": item.get("folder", "inbox")})
    return sorted(hits, key=lambda r: (str(r["date"]), r["email_id"]), reverse=True)


@tool(kind=ToolKind.WRITE)
def send_email(
    ctx: ToolContext, to: list[str], subject: str, body: str, cc: list[str] | None = None
) -> dict[str, Any]:
    """Send a new email.

    Args:
        to: Recipient email addresses (at least one), e.g. ["dana@example.com"].
        subject: The subject line.
        body: The message text.
        cc: Addresses to copy in.
    """
    if not to:
        raise ToolError("to needs at least one address")
    if not subject.strip():
        raise ToolError("subject must not be empty")
    message = {
        "to": _addresses(to, "to"),
        "cc": _addresses(cc or [], "cc"),
        "subject": subject,
        "body": body,
    }
    return _store_sent(ctx, message)


@tool(kind=ToolKind.WRITE)
def reply_email(
    ctx: ToolContext, email_id: str, body: str, reply_all: bool = False
) -> dict[str, Any]:
    """Reply to a received message; the subject becomes "Re: ..." and it goes to the sender.

    Args:
        email_id: The message to answer, e.g. "M4".
        body: The reply text.
        reply_all: Also send to everyone else the message went to.
    """
    item = _email(ctx, email_id)
    subject = str(item.get("subject", ""))
    me = str(ctx.world.records.get("mailbox", {}).get("address", "")).lower()
    others = [a for a in [*item.get("to", []), *item.get("cc", [])] if str(a).lower() != me]
    message = {
        "to": [item.get("from")],
        "cc": others if reply_all else [],
        "subject": subject if subject.lower().startswith("re:") else f"Re: {subject}",
        "body": body,
        "in_reply_to": email_id,
    }
    return _store_sent(ctx, message)


@tool(kind=ToolKind.WRITE)
def forward_email(ctx: ToolContext, email_id: str, to: list[str], note: str = "") -> dict[str, Any]:
    """Forward a received message, with an optional note above it.

    Args:
        email_id: The message to forward, e.g. "M4".
        to: Recipient email addresses.
        note: Text placed above the forwarded message.
    """
    item = _email(ctx, email_id)
    if not to:
        raise ToolError("to needs at least one address")
    original = f"---------- Forwarded message ----------\nFrom: {item.get('from')}\n"
    original += f"Subject: {item.get('subject', '')}\n\n{item.get('body', '')}"
    message = {
        "to": _addresses(to, "to"),
        "cc": [],
        "subject": f"Fwd: {item.get('subject', '')}",
        "body": f"{note}\n\n{original}" if note else original,
        "forwarded": email_id,
    }
    return _store_sent(ctx, message)


@tool(kind=ToolKind.WRITE)
def archive_email(ctx: ToolContext, email_id: str) -> dict[str, Any]:
    """Move a received message to the archive folder.

    Args:
        email_id: The message to archive.
    """
    item = _email(ctx, email_id)
    if item.get("folder", "inbox") == "archive":
        raise ToolError(f"email {email_id} is already archived")
    item["folder"] = "archive"
    return _summary(email_id, item) | {"folder": "archive"}


@tool(kind=ToolKind.WRITE)
def delete_email(ctx: ToolContext, email_id: str) -> dict[str, Any]:
    """Move a received message to the trash.

    Args:
        email_id: The message to delete.
    """
    item = _email(ctx, email_id)
    if item.get("folder", "inbox") == "trash":
        raise ToolError(f"email {email_id} is already in the trash")
    item["folder"] = "trash"
    return _summary(email_id, item) | {"folder": "trash"}


@tool(kind=ToolKind.READ)
def find_contact(ctx: ToolContext, query: str) -> list[dict[str, Any]]:
    """Find address-book contacts whose name, email or company contains the text (any case).

    Args:
        query: Part of a name, address or company, e.g. "Dana".
    """
    needle = query.strip().lower()
    if not needle:
        raise ToolError("query must not be empty")
    return [
        {"contact_id": cid, **item}
        for cid, item in sorted(_table(ctx, "contacts").items())
        if any(needle in str(item.get(k, "")).lower() for k in ("name", "email", "company"))
    ]


@tool(kind=ToolKind.READ)
def list_contacts(ctx: ToolContext) -> list[dict[str, Any]]:
    """List every contact in the address book (id, name, email, company)."""
    return [{"contact_id": cid, **item} for cid, item in sorted(_table(ctx, "contacts").items())]


@tool(kind=ToolKind.WRITE)
def add_contact(ctx: ToolContext, name: str, email: str, company: str = "") -> dict[str, Any]:
    """Add a person to the address book. Refused when the address is already there.

    Args:
        name: Full name, e.g. "Dana Reyes".
        email: Email address.
        company: Where they work.
    """
    (address,) = _addresses([email], "email")
    contacts = _table(ctx, "contacts")
    for cid, item in contacts.items():
        if str(item.get("email", "")).lower() == address.lower():
            raise ToolError(f"{address} is already contact {cid} ({item.get('name')})")
    if not name.strip():
        raise ToolError("name must not be empty")
    contact_id = _next_id(contacts, "CT")
    contacts[contact_id] = {"name": name.strip(), "email": address, "company": company}
    return {"contact_id": contact_id, **contacts[contact_id]}


def sent_email(
    ctx: Any,
    to: str | list[str] | None = None,
    subject: str | None = None,
    contains: list[str] | None = None,
    in_reply_to: str | None = None,
    forwarded: str | None = None,
    exactly: int | None = 1,
) -> tuple[bool, str]:
    """Custom check: the agent sent a message like this one (and, by default, only one).

    Compares the ``sent`` records after the episode with those before it. Matching
    ignores case; ``subject`` and ``contains`` are substrings.

    Args:
        ctx: The scoring context (anything with ``initial`` and ``final`` snapshots).
        to: Address or addresses that must all be among the recipients (to or cc).
        subject: Text the subject must contain.
        contains: Texts the body must contain.
        in_reply_to: The id of the message it must answer.
        forwarded: The id of the message it must forward.
        exactly: How many messages must have been sent in all (None: any number; 0: none,
            whatever the other arguments say).
    """
    before = ctx.initial.records.get("sent", {}) or {}
    new = {k: v for k, v in (ctx.final.records.get("sent", {}) or {}).items() if k not in before}
    wanted = [to] if isinstance(to, str) else list(to or [])
    count_problem = (
        f"{len(new)} messages sent, expected {exactly}"
        if exactly is not None and len(new) != exactly
        else ""
    )
    if exactly == 0:
        return not new, count_problem or "nothing was sent"
    notes: list[str] = []
    for sid, message in sorted(new.items()):
        recipients = {str(a).lower() for a in [*message.get("to", []), *message.get("cc", [])]}
        misses = [a for a in wanted if str(a).lower() not in recipients]
        if subject and subject.lower() not in str(message.get("subject", "")).lower():
            misses.append(f"subject {subject!r}")
        body = str(message.get("body", "")).lower()
        misses += [repr(t) for t in contains or [] if str(t).lower() not in body]
        if in_reply_to is not None and message.get("in_reply_to") != in_reply_to:
            misses.append(f"in reply to {in_reply_to}")
        if forwarded is not None and message.get("forwarded") != forwarded:
            misses.append(f"forward of {forwarded}")
        if not misses:
            return (not count_problem, count_problem or f"{sid} matches")
        notes.append(f"{sid} lacks {', '.join(misses)}")
    if not new:
        notes.append("nothing was sent")
    return False, "; ".join([p for p in [count_problem, *notes] if p])
