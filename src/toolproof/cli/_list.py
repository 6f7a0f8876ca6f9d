"""``toolproof list``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import click


@click.command("list")
@click.option(
    "--suite",
    "suite_name",
    help="Show one suite's tasks and counts by type, category, difficulty, domain.",
)
def list_(suite_name: str | None) -> None:
    """List built-in suites, agent kinds and tools; or one suite's tasks."""
    from rich.console import Console
    from rich.table import Table

    from toolproof.agents import agent_kinds
    from toolproof.spec import builtin_suite_names, load_suite
    from toolproof.tools import toolkits

    from ._common import load_plugins

    load_plugins()
    console = Console()
    if suite_name is not None:
        suite = load_suite(suite_name)
        console.print(
            f"[bold]{suite.name}[/] v{suite.config.version}: "
            f"{len(suite.tasks)} tasks  ({suite.root})"
        )
        for field in ("type", "category", "difficulty", "domain"):
            counts = Counter(str(getattr(t, field)) for t in suite.tasks)
            console.print(
                f"  by {field}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            )
        table = Table(box=None, header_style="bold")
        for column in ("id", "type", "category", "diff", "domain", "tools"):
            table.add_column(column)
        for task in suite.tasks:
            names = [t if isinstance(t, str) else f"{t.name}*" for t in task.tools]
            table.add_row(
                task.id,
                task.type.value,
                task.category.value,
                str(task.difficulty),
                task.domain,
                ", ".join(names),
            )
        console.print(table)
        return
    console.print("[bold]suites[/]")
    for name in builtin_suite_names():
        suite = load_suite(name)
        console.print(
            f"  {name:<14} v{suite.config.version:<8} {len(suite.tasks):>4} tasks  "
            f"{suite.config.description.strip()[:70]}"
        )
    _print_provided(console)
    console.print("[bold]agents[/]")
    console.print("  " + ", ".join(agent_kinds()))
    console.print("[bold]tools[/] (toolkit: tools)")
    for kit, names in toolkits().items():
        console.print(f"  {kit}: {', '.join(names)}")


def _print_provided(console: Any) -> None:
    """Suites built from installed packages: installed (with version) or the install hint."""
    from importlib import metadata

    from toolproof.spec.providers import PROVIDERS

    for prefix, provider in PROVIDERS.items():
        try:
            version = metadata.version(provider.distribution)
        except metadata.PackageNotFoundError:
            console.print(f"  {prefix:<14} not installed: {provider.install}")
            continue
        console.print(
            f"  {prefix:<14} {provider.distribution} {version}  "
            f"toolproof run {prefix}[:PART]  (toolproof list --suite {prefix})"
        )
