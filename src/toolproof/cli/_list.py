"""``toolproof list``."""

from __future__ import annotations

from collections import Counter

import click

from ._listing import AGENT_PURPOSE as AGENT_PURPOSE  # docs and tests import it here


@click.command("list")
@click.option(
    "--suite",
    "suite_name",
    help="Show one suite's tasks and counts by type, category, difficulty, domain.",
)
@click.option(
    "--tools-reference",
    is_flag=True,
    help="Print the built-in tools reference as Markdown (docs/tools.md is this output).",
)
def list_(suite_name: str | None, tools_reference: bool) -> None:
    """List built-in suites, agent kinds and tools; or one suite's tasks."""
    if tools_reference:
        from ._tools_doc import tools_reference as reference

        click.echo(reference(), nl=False)
        return
    from ._common import load_plugins

    load_plugins()
    if suite_name is None:
        from ._listing import overview

        overview()
        return
    from rich.console import Console
    from rich.table import Table

    from toolproof.spec import load_suite

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
        from ._task_stats import group_lines, suite_stats, trap_counts

        stats = {s.task_id: s for s in suite_stats(suite)}
        for field in ("difficulty", "category"):  # docs/cli.md: difficulty statistics
            console.print(f"  per {field}:", highlight=False)
            for line in group_lines(stats.values(), field):
                console.print(f"    {line}", highlight=False)
        traps = trap_counts(stats.values())
        console.print(
            "  traps: " + (", ".join(f"{k} {v}" for k, v in traps.items()) or "none labelled"),
            highlight=False,
        )
        table = Table(box=None, header_style="bold")
        for column in ("id", "type", "category", "diff", "domain", "calls", "offered", "traps"):
            table.add_column(column)
        table.add_column("tools", overflow="fold")
        for task in suite.tasks:
            names = [t if isinstance(t, str) else f"{t.name}*" for t in task.tools]
            row = stats[task.id]
            table.add_row(
                task.id,
                task.type.value,
                task.category.value,
                str(task.difficulty),
                task.domain,
                str(row.reference_calls),
                str(row.tools_offered),
                str(len(row.traps)),
                ", ".join(names),
            )
        console.print(table)
        return
