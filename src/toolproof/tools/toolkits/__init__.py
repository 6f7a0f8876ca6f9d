"""Built-in toolkits. Each module registers its tools with ``@tool`` when imported.

Importing is deferred so that ``import toolproof`` stays cheap: :data:`TOOLS` says which
module holds each built-in tool, so a task's tools load their own modules
(:func:`load_tool`, :func:`load_toolkit`); :func:`load_builtin` imports every one (a
listing, a ``kit.*`` of another toolkit, an unknown name's suggestions).
"""

from __future__ import annotations

import importlib

TOOLS: dict[str, tuple[str, ...]] = {
    "files": (
        "create_file",
        "delete_file",
        "list_files",
        "read_file",
        "search_files",
        "write_file",
    ),
    "inventory": (
        "adjust_stock",
        "get_product",
        "get_stock",
        "list_products",
        "search_products",
        "set_price",
    ),
    "orders": ("cancel_order", "create_order", "find_customer", "get_order", "list_orders"),
    "calculator": ("calculate",),
    "calendar": (
        "cancel_event",
        "create_event",
        "find_free_slots",
        "get_event",
        "list_events",
        "move_event",
    ),
    "mail": (
        "add_contact",
        "archive_email",
        "delete_email",
        "find_contact",
        "forward_email",
        "list_contacts",
        "list_emails",
        "read_email",
        "reply_email",
        "search_emails",
        "send_email",
    ),
    "bank": (
        "add_payee",
        "get_account",
        "get_balance",
        "list_accounts",
        "list_payees",
        "list_transactions",
        "pay_payee",
        "transfer",
    ),
    "sqldb": ("sql_execute", "sql_query", "sql_schema"),
    "rest": ("api_get_item", "api_list_items", "http_request"),
    "rest_auth": ("api_call", "api_token"),
    "user": ("ask_user",),
    "shell": ("read_output", "run_command"),
    "live": ("http_get", "http_send"),
}
"""Each built-in toolkit (the module of this package that holds it) and its tools' names
(a test holds this to what the modules register)."""
BUILTIN = tuple(TOOLS)
"""Modules of this package that hold built-in toolkits."""
HOME = {name: kit for kit, names in TOOLS.items() for name in names}
"""Each built-in tool's toolkit module."""

_loaded = False


def load_builtin() -> None:
    """Import every built-in toolkit once."""
    global _loaded
    if _loaded:
        return
    for name in BUILTIN:
        importlib.import_module(f"{__name__}.{name}")
    _loaded = True


def load_tool(name: str) -> None:
    """Import the module of the built-in tool ``name`` (nothing for any other name)."""
    kit = HOME.get(name)
    if kit is not None:
        importlib.import_module(f"{__name__}.{kit}")


def load_toolkit(kit: str) -> None:
    """Import the built-in toolkit ``kit``; any other name: every built-in one (a plug-in's
    toolkit may hold tools beside them, and an unknown name is reported with them all)."""
    if kit in TOOLS:
        importlib.import_module(f"{__name__}.{kit}")
    else:
        load_builtin()
