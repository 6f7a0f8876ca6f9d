"""The bank toolkit: balances, statements, transfers with limits, payees and payments."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolproof.spec import WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World

TOOLS = [
    "list_accounts",
    "get_balance",
    "get_account",
    "list_transactions",
    "transfer",
    "list_payees",
    "add_payee",
    "pay_payee",
]


@pytest.fixture
def world() -> World:
    return World(
        WorldSpec(
            records={
                "today": "2026-03-02",
                "accounts": {
                    "CHK-1": {
                        "name": "Everyday",
                        "type": "checking",
                        "currency": "EUR",
                        "balance": 500.0,
                        "overdraft": 100,
                        "daily_limit": 700,
                    },
                    "SAV-1": {
                        "name": "Rainy day",
                        "type": "savings",
                        "currency": "EUR",
                        "balance": 50,
                    },
                    "USD-1": {"name": "Travel", "currency": "USD", "balance": 10},
                    "OLD-1": {"name": "Old", "currency": "EUR", "balance": 90, "frozen": True},
                },
                "payees": {"P1": {"name": "City Water", "iban": "DE44500105175407324931"}},
                "transactions": {
                    "H1": {
                        "date": "2026-03-02",
                        "account": "CHK-1",
                        "amount": -150,
                        "counterparty": "Shop",
                        "memo": "",
                        "kind": "payment",
                    },
                    "H2": {
                        "date": "2026-03-01",
                        "account": "CHK-1",
                        "amount": -30,
                        "counterparty": "Cafe",
                        "memo": "",
                        "kind": "card",
                    },
                    "H3": {
                        "date": "2026-03-02",
                        "account": "CHK-1",
                        "amount": -20,
                        "counterparty": "Cafe",
                        "memo": "",
                        "kind": "card",
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


async def test_accounts_balances_and_limits(world: World) -> None:
    accounts = await ok(world, "list_accounts")
    assert [a["account_id"] for a in accounts] == ["CHK-1", "OLD-1", "SAV-1", "USD-1"]
    assert "balance" not in accounts[0]
    assert await ok(world, "get_balance", account_id="SAV-1") == {
        "account_id": "SAV-1",
        "balance": 50.0,
        "currency": "EUR",
        "as_of": "2026-03-02",
    }
    details = await ok(world, "get_account", account_id="CHK-1")
    # only today's outgoing transfers and payments count against the limit (not card payments)
    assert details["left_today"] == 550.0 and details["overdraft"] == 100.0
    assert "your accounts: CHK-1, OLD-1, SAV-1, USD-1" in await error(
        world, "get_balance", account_id="X"
    )


async def test_list_transactions_newest_first(world: World) -> None:
    rows = await ok(world, "list_transactions", account_id="CHK-1")
    assert [r["transaction_id"] for r in rows] == ["H3", "H1", "H2"]
    assert [
        r["transaction_id"]
        for r in await ok(world, "list_transactions", account_id="CHK-1", kind="card", limit=1)
    ] == ["H3"]
    assert "between 1 and 100" in await error(
        world, "list_transactions", account_id="CHK-1", limit=0
    )


async def test_transfer_writes_both_sides(world: World) -> None:
    done = await ok(
        world, "transfer", from_account="CHK-1", to_account="SAV-1", amount=120.55, memo="rent pot"
    )
    assert done == {
        "transactions": ["T4", "T5"],
        "from_balance": 379.45,
        "to_balance": 170.55,
        "amount": 120.55,
    }
    debit, credit = world.records["transactions"]["T4"], world.records["transactions"]["T5"]
    assert (debit["account"], debit["amount"], debit["counterparty"]) == ("CHK-1", -120.55, "SAV-1")
    assert (credit["account"], credit["amount"], credit["kind"]) == ("SAV-1", 120.55, "transfer")


async def test_transfer_refusals(world: World) -> None:
    assert "same account" in await error(
        world, "transfer", from_account="CHK-1", to_account="CHK-1", amount=5
    )
    assert "transfers need the same currency" in await error(
        world, "transfer", from_account="CHK-1", to_account="USD-1", amount=5
    )
    assert "insufficient funds in SAV-1: 50.00 EUR available, 60.00" in await error(
        world, "transfer", from_account="SAV-1", to_account="CHK-1", amount=60
    )
    assert "frozen" in await error(
        world, "transfer", from_account="OLD-1", to_account="SAV-1", amount=5
    )
    assert "more than two decimals" in await error(
        world, "transfer", from_account="CHK-1", to_account="SAV-1", amount=1.005
    )
    assert "more than 0" in await error(
        world, "transfer", from_account="CHK-1", to_account="SAV-1", amount=0
    )
    # the overdraft counts as available money ...
    await ok(world, "transfer", from_account="CHK-1", to_account="SAV-1", amount=540)
    assert world.records["accounts"]["CHK-1"]["balance"] == -40.0
    # ... and the daily limit (700, 150 + 540 used) stops the next one
    assert "daily limit of 700.00 EUR on CHK-1 reached: 10.00 left today" in await error(
        world, "transfer", from_account="CHK-1", to_account="SAV-1", amount=20
    )
    assert "no account 'NOPE'" in await error(
        world, "transfer", from_account="CHK-1", to_account="NOPE", amount=1
    )


async def test_payees_and_payments(world: World) -> None:
    added = await ok(world, "add_payee", name="Gym Plus", iban="nl91 abna 0417 1643 00")
    assert added == {"payee_id": "P2", "name": "Gym Plus", "iban": "NL91ABNA0417164300"}
    assert "already saved as payee P1 (City Water)" in await error(
        world, "add_payee", name="Water", iban="DE44500105175407324931"
    )
    assert "not a valid IBAN" in await error(world, "add_payee", name="X", iban="12345")
    assert "name must not be empty" in await error(
        world, "add_payee", name=" ", iban="GB29NWBK60161331926819"
    )
    assert [p["payee_id"] for p in await ok(world, "list_payees")] == ["P1", "P2"]
    paid = await ok(
        world, "pay_payee", from_account="CHK-1", payee_id="P2", amount=35, memo="March"
    )
    assert paid == {"transaction_id": "T4", "payee_id": "P2", "amount": 35.0, "balance": 465.0}
    assert world.records["transactions"]["T4"]["counterparty"] == "Gym Plus"
    assert "no payee 'P9'" in await error(
        world, "pay_payee", from_account="CHK-1", payee_id="P9", amount=1
    )
