"""Custom checks of the ``hard`` suite that do not depend on the ids the agent's calls made.

Each compares the records after the episode with those before it, so a check measures
what the agent changed, never what was already there.
"""

from __future__ import annotations

import re
from typing import Any

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _new(ctx: Any, table: str) -> list[dict[str, Any]]:
    before = ctx.initial.records.get(table, {}) or {}
    after = ctx.final.records.get(table, {}) or {}
    return [row for key, row in after.items() if key not in before and isinstance(row, dict)]


def paid(
    ctx: Any, account: str, payee: str, amount: float, memo: str, exactly: int = 1
) -> tuple[bool, str]:
    """``exactly`` new payments from ``account`` to ``payee`` (its name) of ``amount`` whose
    memo mentions ``memo`` (any case)."""
    hits = [
        row
        for row in _new(ctx, "transactions")
        if row.get("account") == account
        and str(row.get("counterparty", "")).lower() == payee.lower()
        and abs(float(row.get("amount", 0)) + float(amount)) < 0.005
        and memo.lower() in str(row.get("memo", "")).lower()
    ]
    ok = len(hits) == exactly
    return ok, f"{len(hits)} payment(s) of {amount} to {payee} with memo {memo}, expected {exactly}"


def sent_amount(ctx: Any, to: str, amount: float, exactly: int = 1) -> tuple[bool, str]:
    """``exactly`` new messages to ``to`` whose body states ``amount`` (within a cent; ``1,234.50``
    and ``1234.5`` both count)."""
    hits = []
    for row in _new(ctx, "sent"):
        recipients = [str(r).lower() for r in [*(row.get("to") or []), *(row.get("cc") or [])]]
        if to.lower() not in recipients:
            continue
        numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(str(row.get("body", "")))]
        if any(abs(n - float(amount)) < 0.006 for n in numbers):
            hits.append(row)
    ok = len(hits) == exactly
    return ok, f"{len(hits)} message(s) to {to} stating {amount}, expected {exactly}"


def moved_meeting(
    ctx: Any,
    title: str,
    date: str,
    start: str,
    end: str,
    attendees: list[str],
    not_on: str,
) -> tuple[bool, str]:
    """One active event ``title`` on ``date`` (the day the user moved it to) at ``start`` to
    ``end`` inviting ``attendees``, and none left on ``not_on`` (the day the mail asked for).

    One required change, not a veto: booking the mail's day loses this credit only.
    """
    from toolproof.tools.toolkits.calendar import has_event

    booked, detail = has_event(ctx, title, date, start, end, attendees)
    if not booked:
        return False, detail
    stale, _ = has_event(ctx, title, not_on, count=0)
    if not stale:
        return False, f"a {title!r} event is still on {not_on}, the day the user moved it from"
    return True, detail
