"""Bank accounts, payees and transfers, kept in the records.

Record layout::

    today:        "2026-03-02"                       # the bank's date (optional)
    accounts:     {ID: {name, type, currency, balance, overdraft, daily_limit, frozen}}
    payees:       {ID: {name, iban}}
    transactions: {ID: {date, account, amount, counterparty, memo, kind}}

A transaction is one line of one account's statement: ``amount`` is negative
for money out. A transfer between two accounts writes two lines (``T<n>`` for
the debit, ``T<n+1>`` for the credit); a payment to a payee writes one. Money
leaves an account only if ``balance + overdraft`` covers it, the account is
not frozen, and the day's outgoing total stays within ``daily_limit`` (when
set). Amounts have at most two decimals; balances are rounded to cents.
"""

from __future__ import annotations

import re
from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool

DEFAULT_TODAY = "2026-03-02"
_IBAN = re.compile(r"^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$")
_OUTGOING = ("transfer", "payment")


def _table(ctx: ToolContext, name: str) -> dict[str, Any]:
    table = ctx.world.records.setdefault(name, {})
    assert isinstance(table, dict)
    return table


def _account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    accounts = _table(ctx, "accounts")
    if account_id not in accounts:
        known = ", ".join(sorted(accounts)) or "none"
        raise ToolError(f"no account {account_id!r}; your accounts: {known}")
    item = accounts[account_id]
    assert isinstance(item, dict)
    return item


def _today(ctx: ToolContext) -> str:
    return str(ctx.world.records.get("today", DEFAULT_TODAY))


def _money(value: float) -> float:
    return round(float(value), 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def _order(row: dict[str, Any]) -> tuple[str, int, str]:
    tid = str(row["transaction_id"])
    digits = "".join(ch for ch in tid if ch.isdigit())
    return str(row.get("date")), int(digits or 0), tid


def _check_amount(amount: float) -> float:
    if amount <= 0:
        raise ToolError(f"amount must be more than 0, got {amount}")
    if abs(amount * 100 - round(amount * 100)) > 1e-6:
        raise ToolError(f"amount {amount} has more than two decimals")
    return _money(amount)


def _sent_today(ctx: ToolContext, account_id: str) -> float:
    today = _today(ctx)
    return _money(
        -sum(
            float(t.get("amount", 0))
            for t in _table(ctx, "transactions").values()
            if t.get("account") == account_id
            and t.get("date") == today
            and t.get("kind") in _OUTGOING
            and float(t.get("amount", 0)) < 0
        )
    )


def _can_send(ctx: ToolContext, account_id: str, amount: float) -> dict[str, Any]:
    item = _account(ctx, account_id)
    currency = item.get("currency", "EUR")
    if item.get("frozen"):
        raise ToolError(f"account {account_id} is frozen; no money can leave it")
    available = _money(float(item.get("balance", 0)) + float(item.get("overdraft", 0)))
    if amount > available:
        raise ToolError(
            f"insufficient funds in {account_id}: {available:.2f} {currency} available, "
            f"{amount:.2f} requested"
        )
    limit = item.get("daily_limit")
    if limit is not None:
        left = _money(float(limit) - _sent_today(ctx, account_id))
        if amount > left:
            raise ToolError(
                f"daily limit of {float(limit):.2f} {currency} on {account_id} reached: "
                f"{left:.2f} left today, {amount:.2f} requested"
            )
    return item


def _record(
    ctx: ToolContext, account_id: str, amount: float, counterparty: str, memo: str, kind: str
) -> str:
    transactions = _table(ctx, "transactions")
    number = len(transactions) + 1
    while f"T{number}" in transactions:
        number += 1
    tx_id = f"T{number}"
    transactions[tx_id] = {
        "date": _today(ctx),
        "account": account_id,
        "amount": _money(amount),
        "counterparty": counterparty,
        "memo": memo,
        "kind": kind,
    }
    item = _account(ctx, account_id)
    item["balance"] = _money(float(item.get("balance", 0)) + amount)
    return tx_id


@tool(kind=ToolKind.READ)
def list_accounts(ctx: ToolContext) -> list[dict[str, Any]]:
    """List your accounts: id, name, type and currency (balances: get_balance)."""
    return [
        {
            "account_id": aid,
            "name": item.get("name"),
            "type": item.get("type", "checking"),
            "currency": item.get("currency", "EUR"),
        }
        for aid, item in sorted(_table(ctx, "accounts").items())
    ]


@tool(kind=ToolKind.READ)
def get_balance(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Return an account's current balance.

    Args:
        account_id: The account's id, e.g. "CHK-1".
    """
    item = _account(ctx, account_id)
    return {
        "account_id": account_id,
        "balance": _money(item.get("balance", 0)),
        "currency": item.get("currency", "EUR"),
        "as_of": _today(ctx),
    }


@tool(kind=ToolKind.READ)
def get_account(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Return an account's full details: balance, overdraft, daily limit and what is left of it.

    Args:
        account_id: The account's id, e.g. "CHK-1".
    """
    item = _account(ctx, account_id)
    limit = item.get("daily_limit")
    return {
        "account_id": account_id,
        "name": item.get("name"),
        "type": item.get("type", "checking"),
        "currency": item.get("currency", "EUR"),
        "balance": _money(item.get("balance", 0)),
        "overdraft": _money(item.get("overdraft", 0)),
        "daily_limit": limit,
        "left_today": None
        if limit is None
        else _money(float(limit) - _sent_today(ctx, account_id)),
        "frozen": bool(item.get("frozen", False)),
        "as_of": _today(ctx),
    }


@tool(kind=ToolKind.READ)
def list_transactions(
    ctx: ToolContext, account_id: str, limit: int = 20, kind: str | None = None
) -> list[dict[str, Any]]:
    """List an account's transactions, newest first; amounts below zero left the account.

    Args:
        account_id: The account's id.
        limit: At most this many transactions (1-100).
        kind: Only this kind: transfer, payment, deposit, card or fee.
    """
    _account(ctx, account_id)
    if not 1 <= limit <= 100:
        raise ToolError("limit must be between 1 and 100")
    rows = [
        {"transaction_id": tid, **t}
        for tid, t in _table(ctx, "transactions").items()
        if t.get("account") == account_id and (kind is None or t.get("kind") == kind)
    ]
    rows.sort(key=_order, reverse=True)
    return rows[:limit]


@tool(kind=ToolKind.WRITE)
def transfer(
    ctx: ToolContext, from_account: str, to_account: str, amount: float, memo: str = ""
) -> dict[str, Any]:
    """Move money between two of your own accounts (same currency).

    Args:
        from_account: The account the money leaves, e.g. "CHK-1".
        to_account: The account it goes to, e.g. "SAV-1".
        amount: How much, more than 0, at most two decimals.
        memo: A note shown on both statements.
    """
    value = _check_amount(amount)
    if from_account == to_account:
        raise ToolError("from_account and to_account are the same account")
    target = _account(ctx, to_account)
    source = _can_send(ctx, from_account, value)
    if source.get("currency", "EUR") != target.get("currency", "EUR"):
        raise ToolError(
            f"{from_account} is in {source.get('currency', 'EUR')} and {to_account} in "
            f"{target.get('currency', 'EUR')}; transfers need the same currency"
        )
    debit = _record(ctx, from_account, -value, to_account, memo, "transfer")
    credit = _record(ctx, to_account, value, from_account, memo, "transfer")
    return {
        "transactions": [debit, credit],
        "from_balance": source["balance"],
        "to_balance": target["balance"],
        "amount": value,
    }


@tool(kind=ToolKind.READ)
def list_payees(ctx: ToolContext) -> list[dict[str, Any]]:
    """List saved payees (people and companies you pay): id, name and IBAN."""
    return [{"payee_id": pid, **item} for pid, item in sorted(_table(ctx, "payees").items())]


@tool(kind=ToolKind.WRITE)
def add_payee(ctx: ToolContext, name: str, iban: str) -> dict[str, Any]:
    """Save a new payee. Refused when the IBAN is already saved.

    Args:
        name: The payee's name, e.g. "City Water".
        iban: Their IBAN, without spaces, e.g. "DE44500105175407324931".
    """
    number = iban.replace(" ", "").upper()
    if not _IBAN.match(number):
        raise ToolError(
            f"{iban!r} is not a valid IBAN (two letters, two digits, 10-30 letters/digits)"
        )
    payees = _table(ctx, "payees")
    for pid, item in payees.items():
        if str(item.get("iban", "")).upper() == number:
            raise ToolError(f"IBAN {number} is already saved as payee {pid} ({item.get('name')})")
    if not name.strip():
        raise ToolError("name must not be empty")
    count = len(payees) + 1
    while f"P{count}" in payees:
        count += 1
    payees[f"P{count}"] = {"name": name.strip(), "iban": number}
    return {"payee_id": f"P{count}", **payees[f"P{count}"]}


@tool(kind=ToolKind.WRITE)
def pay_payee(
    ctx: ToolContext, from_account: str, payee_id: str, amount: float, memo: str = ""
) -> dict[str, Any]:
    """Pay a saved payee from one of your accounts.

    Args:
        from_account: The account the money leaves, e.g. "CHK-1".
        payee_id: The payee's id, e.g. "P2" (see list_payees).
        amount: How much, more than 0, at most two decimals.
        memo: A reference the payee sees, e.g. an invoice number.
    """
    value = _check_amount(amount)
    payees = _table(ctx, "payees")
    if payee_id not in payees:
        raise ToolError(f"no payee {payee_id!r}; list_payees shows the saved payees")
    source = _can_send(ctx, from_account, value)
    tx_id = _record(ctx, from_account, -value, str(payees[payee_id].get("name")), memo, "payment")
    return {
        "transaction_id": tx_id,
        "payee_id": payee_id,
        "amount": value,
        "balance": source["balance"],
    }
