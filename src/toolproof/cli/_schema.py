"""``toolproof schema``."""

from __future__ import annotations

import json

import click


@click.command()
@click.option(
    "--suite", "which", flag_value="suite", help="Print the schema of suite.yaml instead."
)
@click.option(
    "--task", "which", flag_value="task", default=True, help="Print the task schema (default)."
)
def schema(which: str) -> None:
    """Print the JSON Schema of the task format (or of suite.yaml) for editors and CI."""
    from toolproof.spec import suite_schema, task_schema

    data = suite_schema() if which == "suite" else task_schema()
    click.echo(json.dumps(data, indent=2, sort_keys=True))
