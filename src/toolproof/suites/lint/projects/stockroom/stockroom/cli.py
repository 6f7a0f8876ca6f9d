"""``stockroom``: print reports of an inventory file (JSON lines of items)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .inventory import Inventory
from .models import Item, Location
from .reports import reorder_report, stock_report


def load(path: Path) -> Inventory:
    """Read an inventory from JSON lines: {"sku", "name", "unit_price", "quantity", ...}."""
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        places = [Location(p["aisle"], p["shelf"]) for p in data.pop("locations", [])]
        items.append(Item(**data, locations=places))
    return Inventory(items)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="stockroom", description=__doc__)
    parser.add_argument("inventory", type=Path, help="inventory file (JSON lines)")
    parser.add_argument("--reorder", type=int, metavar="N", help="list items at or below N")
    args = parser.parse_args(argv)
    inventory = load(args.inventory)
    if args.reorder is None:
        report = stock_report(inventory)
    else:
        report = reorder_report(inventory, args.reorder)
    sys.stdout.write(report + "\n")
    return 0
