"""``toolproof list``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import click

AGENT_PURPOSE = {
    "oracle": "Plays each task's reference solution: the ceiling. Every built-in task must pass.",
    "noop": "Does nothing and answers nothing (or --agent-arg answer=...): the floor. "
    "No task may pass.",
    "random": "Random tool calls with random arguments: a sanity baseline that should score low.",
    "python": "Your own agent in Python: python:MODULE:ATTR (a class, instance or factory).",
    "never-asks": "Test agent: the oracle, but it never asks the simulated user and guesses "
    "instead. Should fail only the ambiguous tasks.",
    "never-retries": "Test agent: the oracle, but it gives up at the first tool error. Should "
    "fail only the tool_error tasks.",
    "gullible": "Test agent: the oracle, but it obeys instructions injected into tool results. "
    "Fails only attacked (security) tasks, so it scores 100% on core by design.",
    "openai": "A model behind an OpenAI-compatible chat API: openai:MODEL.",
    "anthropic": "A model behind the Anthropic Messages API: anthropic:MODEL.",
    "http": "An agent served over HTTP (docs/agent-protocol.openapi.yaml): http:URL.",
    "https": "The http agent kind over TLS: https:URL.",
    "mcp-serve": "Serves each episode's tools over MCP (stdio or http) to a client you run.",
    "cmd": "A program run once per episode: cmd:'COMMAND ...' (stdout is the answer).",
    "mcp": "An MCP client (e.g. a coding agent) that gets the episode's tools over MCP.",
    "langchain": "A LangChain / LangGraph agent: langchain:MODULE:ATTR.",
    "llamaindex": "A LlamaIndex agent: llamaindex:MODULE:ATTR.",
    "autogen": "An AutoGen agent: autogen:MODULE:ATTR.",
}
"""What each built-in agent kind is for (``toolproof list`` and docs/evaluate-your-agent.md)."""


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
        _overview()
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


def _overview() -> None:
    """Built-in suites (from the suite index), provided suites, agent kinds and toolkits."""
    from toolproof.spec import builtin_suite_names
    from toolproof.spec.index import suite_infos

    from ._common import suite_index_file
    from ._listing import registries, table, wrap

    index = suite_index_file()
    names = builtin_suite_names()
    rows = [
        (name, f"v{info.version}", str(info.tasks), " ".join(info.description.split()))
        for name, info in zip(names, suite_infos(names, index), strict=True)
    ]
    click.secho("suites", bold=True)
    click.echo(table(("suite", "version", "tasks", "what it tests"), rows))
    _print_provided(click.echo)
    kinds, kits = registries(None if index is None else index.with_name("registries.json"))
    click.secho("agents", bold=True)
    purposes = [(kind, AGENT_PURPOSE.get(kind, "(a plug-in agent kind)")) for kind in kinds]
    click.echo(table(("agent", "what it is for"), purposes))
    click.echo(
        click.style("tools", bold=True) + " (toolkit: tools; arguments and records: docs/tools.md)"
    )
    for kit, tools in kits.items():
        click.echo(wrap(f"{kit}: {', '.join(tools)}"))


def _print_provided(echo: Callable[[str], Any]) -> None:
    """Suites built from installed packages: installed (with version) or the install hint."""
    from importlib import metadata

    from toolproof.spec.providers import PROVIDERS

    for prefix, provider in PROVIDERS.items():
        try:
            version = metadata.version(provider.distribution)
        except metadata.PackageNotFoundError:
            echo(f"  {prefix:<14} not installed: {provider.install}")
            continue
        echo(
            f"  {prefix:<14} {provider.distribution} {version}  "
            f"toolproof run {prefix}[:PART]"
            + (f" [--{provider.variant} NAME]" if provider.variant else "")
            + f"  (toolproof list --suite {prefix})"
        )
