"""``toolproof show``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--no-tasks", is_flag=True, help="Only the headline numbers.")
@click.option("--failures", is_flag=True, help="List failed episodes grouped by failure mode.")
def show(run_dir: Path, no_tasks: bool, failures: bool) -> None:
    """Show the summary of the run in RUN_DIR."""
    from toolproof.report import print_summary

    try:
        if failures:
            from ._failures import print_failures

            print_failures(run_dir)
            return
        print_summary(run_dir, tasks=not no_tasks)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
