"""``toolproof new-task``: scaffold a task file, with its solution and checks, to fill in.

The scaffold is a working task of the chosen kind and domain whose prompt is left for
the author: lines marked ``FILL IN`` must be rewritten, and ``toolproof check-task``
refuses a file that still holds one (rule ``scaffold``). Everything else (params drawn
per seed, a world, a progress check, a collateral-damage guard, a reference solution)
is there to be edited, so a new task starts from a shape that passes the gate.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

import click

_HEAD = """\
# Scaffolded by `toolproof new-task`. Rewrite the prompt lines it marks, change what
# you like, then run `toolproof check-task $path` (docs/contributing-tasks.md;
# `toolproof schema` prints the JSON Schema editors can check this file with).
id: $id
"""

SCAFFOLDS: dict[tuple[str, str], str] = {
    ("lookup", "banking"): """\
description: >
  FILL IN: ask for one fact the agent must look up, e.g. the balance of the
  {{ name }} account ({{ acc }}) (never the answer itself).
type: single_tool
category: normal
difficulty: 1
domain: banking
tags: []
tools: [get_balance, list_accounts, list_transactions, transfer]   # transfer: a distractor
params:
  i: {choice: [0, 1, 2]}
  acc: {expr: "['CHK-1', 'SAV-1', 'HOL-1'][i]"}
  name: {expr: "['Everyday', 'Rainy day', 'Holiday'][i]"}
  b0: {float: [150, 4000]}
  b1: {float: [150, 9000]}
  b2: {float: [150, 2500]}
  bal: {expr: "[b0, b1, b2][i]"}
world:
  records:
    today: "2026-03-02"
    accounts:
      CHK-1: {name: Everyday, type: checking, currency: EUR, balance: "{{ b0 }}"}
      SAV-1: {name: Rainy day, type: savings, currency: EUR, balance: "{{ b1 }}"}
      HOL-1: {name: Holiday, type: savings, currency: EUR, balance: "{{ b2 }}"}
success:
  - kind: output
    name: states_balance
    number: "{{ bal }}"
    tolerance: 0.005
  - kind: state
    name: nothing_changed
    unchanged_elsewhere: true
solution:
  calls:
    - {tool: get_balance, args: {account_id: "{{ acc }}"}}
  answer: "Your {{ name }} account {{ acc }} holds {{ bal }} EUR."
""",
    ("change", "banking"): """\
description: >
  FILL IN: ask for one change, e.g. move {{ amount }} EUR from the Everyday
  account to the {{ name }} account, and to report the new {{ name }} balance.
type: multi_step
category: normal
difficulty: 2
domain: banking
tags: []
tools: [list_accounts, get_balance, transfer, pay_payee, list_payees]
params:
  i: {choice: [0, 1]}
  acc: {expr: "['SAV-1', 'HOL-1'][i]"}
  name: {expr: "['Rainy day', 'Holiday'][i]"}
  amount: {int: [20, 300]}
  b0: {float: [900, 4000]}
  b1: {float: [150, 900]}
  b2: {float: [150, 900]}
  before: {expr: "[b1, b2][i]"}
  after: {expr: "round(before + amount, 2)"}
world:
  records:
    today: "2026-03-02"
    accounts:
      CHK-1: {name: Everyday, type: checking, currency: EUR, balance: "{{ b0 }}"}
      SAV-1: {name: Rainy day, type: savings, currency: EUR, balance: "{{ b1 }}"}
      HOL-1: {name: Holiday, type: savings, currency: EUR, balance: "{{ b2 }}"}
success:
  - kind: state
    name: moved
    records:
      "accounts.{{ acc }}.balance": "{{ after }}"
      accounts.CHK-1.balance: "{{ round(b0 - amount, 2) }}"
    unchanged_elsewhere: true
    allow_changes: ["transactions.T*"]
  - kind: output
    name: reports_new_balance
    number: "{{ after }}"
    tolerance: 0.005
solution:
  calls:
    - {tool: list_accounts}
    - {tool: transfer, args: {from_account: CHK-1, to_account: "{{ acc }}", amount: "{{ amount }}"}}
  answer: "Moved {{ amount }} EUR; the {{ name }} account now holds {{ after }} EUR."
""",
    ("lookup", "shop"): """\
description: >
  FILL IN: ask for one fact, e.g. how many units of "{{ pname }}" are in stock
  (never the answer itself).
type: multi_step
category: normal
difficulty: 2
domain: shop
tags: []
tools: [search_products, get_stock, list_products, adjust_stock]
params:
  i: {choice: [0, 1, 2]}
  pid: {expr: "['G1', 'G2', 'G3'][i]"}
  pname: {expr: "['Garden hose', 'Pruning shears', 'Watering can'][i]"}
  s0: {int: [0, 80]}
  s1: {int: [0, 80]}
  s2: {int: [0, 80]}
  stock: {expr: "[s0, s1, s2][i]"}
world:
  records:
    products:
      G1: {name: Garden hose, category: garden, price: 24.0, stock: "{{ s0 }}"}
      G2: {name: Pruning shears, category: garden, price: 17.5, stock: "{{ s1 }}"}
      G3: {name: Watering can, category: garden, price: 11.0, stock: "{{ s2 }}"}
success:
  - kind: output
    name: states_stock
    number: "{{ stock }}"
  - kind: evidence
    name: looked_it_up
    require: ["{{ pid }}"]
    where: transcript
  - kind: state
    name: nothing_changed
    unchanged_elsewhere: true
solution:
  calls:
    - {tool: search_products, args: {query: "{{ pname }}"}}
    - {tool: get_stock, args: {product_id: "{{ pid }}"}}
  answer: "{{ pname }} ({{ pid }}) has {{ stock }} units in stock."
""",
    ("change", "shop"): """\
description: >
  FILL IN: ask for one change, e.g. a delivery of {{ qty }} units of
  "{{ pname }}" arrived: add them to its stock and report the new level.
type: multi_step
category: normal
difficulty: 2
domain: shop
tags: []
tools: [search_products, get_stock, adjust_stock, list_products, set_price]
params:
  i: {choice: [0, 1, 2]}
  pid: {expr: "['G1', 'G2', 'G3'][i]"}
  pname: {expr: "['Garden hose', 'Pruning shears', 'Watering can'][i]"}
  qty: {int: [5, 60]}
  before: {int: [0, 30]}
  after: {expr: "before + qty"}
world:
  records:
    products:
      G1: {name: Garden hose, category: garden, price: 24, stock: "{{ [before, 12, 12][i] }}"}
      G2: {name: Pruning shears, category: garden, price: 17, stock: "{{ [9, before, 9][i] }}"}
      G3: {name: Watering can, category: garden, price: 11, stock: "{{ [31, 31, before][i] }}"}
success:
  - kind: state
    name: stock_updated
    records:
      "products.{{ pid }}.stock": "{{ after }}"
    unchanged_elsewhere: true
  - kind: output
    name: reports_new_level
    number: "{{ after }}"
solution:
  calls:
    - {tool: search_products, args: {query: "{{ pname }}"}}
    - {tool: adjust_stock, args: {product_id: "{{ pid }}", delta: "{{ qty }}"}}
  answer: "{{ pname }} now has {{ after }} units in stock."
""",
}
"""The scaffolds by (kind, domain)."""

KINDS = sorted({kind for kind, _ in SCAFFOLDS})
DOMAINS = sorted({domain for _, domain in SCAFFOLDS})


def scaffold(task_id: str, kind: str, domain: str, shown_path: str) -> str:
    """The text of a new task file."""
    head = Template(_HEAD).substitute(id=task_id, path=shown_path)
    return head + SCAFFOLDS[kind, domain]


@click.command("new-task")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="change",
    show_default=True,
    help="lookup: answer a fact from the world; change: make a change in it.",
)
@click.option(
    "--domain",
    type=click.Choice(DOMAINS),
    default="banking",
    show_default=True,
    help="Which toolkit the task's world and tools come from.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def new_task(path: Path, kind: str, domain: str, force: bool) -> None:
    """Write a task file to PATH (its name, without .yaml, is the task id) to fill in.

    Rewrite the lines marked FILL IN, then prove it with `toolproof check-task PATH`.
    Exit status: 0 written; 2 a bad path or name, or the file exists (use --force).
    """
    from ._common import EXIT_USAGE

    task_id = path.stem
    if path.suffix not in (".yaml", ".yml") or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", task_id):
        click.echo(
            f"error: {str(path)!r}: the file must be named TASK_ID.yaml, the id in lowercase "
            "letters, digits, '-', '_' and '.', e.g. tasks/pay-invoice.yaml",
            err=True,
        )
        raise SystemExit(EXIT_USAGE)
    if path.exists() and not force:
        click.echo(f"error: {path} exists; choose another name or pass --force", err=True)
        raise SystemExit(EXIT_USAGE)
    try:  # the docs' first example names a folder that does not exist yet
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        click.echo(f"error: cannot create the folder {str(path.parent)!r}: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    path.write_text(scaffold(task_id, kind, domain, str(path)), encoding="utf-8")
    click.echo(f"wrote {path} ({kind}, {domain}); rewrite the FILL IN lines, then run:")
    click.echo(f"  toolproof check-task {path}")
