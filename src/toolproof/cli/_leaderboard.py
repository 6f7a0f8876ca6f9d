"""``toolproof leaderboard RUN...``: rank any number of runs of one suite."""

from __future__ import annotations

import json
from pathlib import Path

import click

_RUN = click.Path(path_type=Path, exists=True, file_okay=False)


@click.command()
@click.argument("runs", nargs=-1, required=True, type=_RUN)
@click.option(
    "--html",
    "html",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the board as one self-contained HTML file here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the board as JSON instead.")
@click.option(
    "--alpha",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the pairwise tests.",
)
def leaderboard(runs: tuple[Path, ...], html: Path | None, as_json: bool, alpha: float) -> None:
    """Rank the runs RUNS... of one suite: success with its 95% confidence interval,
    pass@k and pass^k, tokens and cost per task, and the exact McNemar test on success
    between each run and the next one down (when the runs share the seed).

    \b
    Examples:
      toolproof leaderboard runs/core-a runs/core-b runs/core-c
      toolproof leaderboard runs/* --html board.html

    Runs of different suites, suite versions, suite content or prompt tracks are
    refused, naming each difference (exit 2). `toolproof view` shows the same board
    (the "leaderboard" link of the runs page).
    """
    from toolproof.metrics.leaderboard import LeaderboardMismatch
    from toolproof.metrics.leaderboard import leaderboard as rank

    try:
        board = rank(list(runs), alpha=alpha)
    except LeaderboardMismatch as exc:
        raise click.ClickException(str(exc)) from None
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(board.to_dict(), indent=2, sort_keys=True))
    else:
        from toolproof.report.leaderboard import print_leaderboard

        print_leaderboard(board)
    if html is not None:
        from toolproof.report.leaderboard import write_leaderboard_html

        write_leaderboard_html(board, html)
        click.echo(f"wrote {html}", err=True)
