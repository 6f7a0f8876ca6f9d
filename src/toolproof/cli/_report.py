"""``toolproof report``."""

from __future__ import annotations

from pathlib import Path

import click

_RUN = click.Path(path_type=Path, exists=True, file_okay=False)


@click.command()
@click.argument("run_dir", type=_RUN)
@click.option("--compare", "other", type=_RUN, help="An earlier run to compare with (before).")
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Compare runs of different suites, seeds or tracks anyway.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the HTML (default: RUN_DIR/report.html).",
)
@click.option(
    "--max-trajectories",
    default=300,
    show_default=True,
    type=click.IntRange(0),
    help="Trajectories rendered in full, failures first.",
)
@click.option("--no-charts", is_flag=True, help="Leave the charts out (no plotly needed).")
def report(
    run_dir: Path,
    other: Path | None,
    allow_mismatch: bool,
    output: Path | None,
    max_trajectories: int,
    no_charts: bool,
) -> None:
    """Write a self-contained HTML report of the run in RUN_DIR.

    The file needs no network: styles, script, data and charts are inline, so it
    can be kept as a CI artifact. With --compare, RUN_DIR is "after" and OTHER
    "before".
    """
    from toolproof.report import write_report

    target = output or run_dir / "report.html"
    try:
        write_report(
            run_dir,
            target,
            compare=other,
            allow_mismatch=allow_mismatch,
            max_trajectories=max_trajectories,
            charts=not no_charts,
        )
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    size = target.stat().st_size / 1e6
    click.echo(f"wrote {target} ({size:.1f} MB)")
