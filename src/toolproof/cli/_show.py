"""``toolproof show``."""

from __future__ import annotations

from pathlib import Path

import click

RUNS = Path("runs")
"""Where ``toolproof run`` puts run folders by default (``--out`` elsewhere)."""


def latest_run(root: Path = RUNS) -> Path:
    """The most recently written run folder under ``root`` (by its summary.json, else its
    store), for ``toolproof show`` with no argument.

    Raises:
        click.ClickException: when ``root`` holds no run, saying where it looked.
    """
    from toolproof.results import DB_NAME, SUMMARY

    best: tuple[float, Path] | None = None
    if root.is_dir():
        for folder in root.iterdir():
            stamps = [
                (folder / name).stat().st_mtime
                for name in (SUMMARY, DB_NAME)
                if (folder / name).is_file()
            ]
            if folder.is_dir() and stamps and (best is None or max(stamps) > best[0]):
                best = (max(stamps), folder)
    if best is None:
        raise click.ClickException(
            f"no run folder in {root.resolve()}; give RUN_DIR, or start one with "
            "`toolproof run core --agent oracle`"
        )
    return best[1]


@click.command()
@click.argument(
    "run_dir", required=False, type=click.Path(path_type=Path, exists=True, file_okay=False)
)
@click.option("--no-tasks", is_flag=True, help="Only the headline numbers.")
@click.option("--failures", is_flag=True, help="List failed episodes grouped by failure mode.")
def show(run_dir: Path | None, no_tasks: bool, failures: bool) -> None:
    """Show the summary of the run in RUN_DIR (default: the latest run under ./runs),
    with its tokens and cost."""
    from toolproof.report import print_summary

    if run_dir is None:
        run_dir = latest_run()
        click.echo(f"latest run: {run_dir}", err=True)
    try:
        if failures:
            from ._failures import print_failures

            print_failures(run_dir)
            return
        print_summary(run_dir, tasks=not no_tasks)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
