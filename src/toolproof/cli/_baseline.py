"""``toolproof baseline``: keep a named baseline run per suite version and check runs against it."""

from __future__ import annotations

from pathlib import Path

import click

from ._compare import ALLOW_PARTIAL, REGRESSION_EXIT, check_metric, finish

_RUN_DIR = click.Path(path_type=Path, exists=True, file_okay=False)
_DIR_OPTION = click.option(
    "--dir",
    "root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path(".toolproof") / "baselines",
    show_default=True,
    help="Baselines directory.",
)


@click.group()
def baseline() -> None:
    """Save a run as a named baseline of its suite version, or check a run against one.

    \b
    Examples:
      toolproof baseline save main runs/core-oracle-20261130-101500
      toolproof baseline check main runs/core-mine-20261201-090000 --fail-on-regression
    """


@baseline.command()
@click.argument("name")
@click.argument("run_dir", type=_RUN_DIR)
@_DIR_OPTION
def save(name: str, run_dir: Path, root: Path) -> None:
    """Keep RUN_DIR as baseline NAME of its suite version (replacing an older one)."""
    from toolproof.metrics.baseline import save_baseline

    try:
        path = save_baseline(name, run_dir, root)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"saved baseline {name!r}: {path}")


@baseline.command()
@click.argument("name")
@click.argument("run_dir", type=_RUN_DIR)
@_DIR_OPTION
@click.option(
    "--json",
    "json_out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the comparison as JSON.",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help=f"Exit {REGRESSION_EXIT} when the run is significantly worse, scored fewer "
    "episodes than the baseline, or covers different tasks.",
)
@click.option(
    "--metric", default="success", show_default=True, help="Metric the regression gate looks at."
)
@click.option(
    "--allow-mismatch", is_flag=True, help="Compare even when suite content, seed or track differ."
)
@ALLOW_PARTIAL
def check(
    name: str,
    run_dir: Path,
    root: Path,
    json_out: Path | None,
    fail_on_regression: bool,
    metric: str,
    allow_mismatch: bool,
    allow_partial: bool,
) -> None:
    """Compare RUN_DIR (B) with baseline NAME of its suite version (A).

    Exit status as for ``toolproof compare``: 1 when either run scored no
    episode, or, with --fail-on-regression, when RUN_DIR is significantly worse,
    scored fewer episodes than the baseline or covers different tasks.
    """
    from toolproof.metrics.baseline import find_baseline
    from toolproof.metrics.compare import compare_runs

    check_metric(metric)
    try:
        base = find_baseline(name, run_dir, root)
        comparison = compare_runs(base, run_dir, allow_mismatch=allow_mismatch)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    finish(
        comparison,
        metric=metric,
        json_out=json_out,
        fail_on_regression=fail_on_regression,
        allow_partial=allow_partial,
    )


@baseline.command("list")
@_DIR_OPTION
def list_(root: Path) -> None:
    """List the saved baselines."""
    from toolproof.metrics.baseline import list_baselines

    found = list_baselines(root)
    if not found:
        click.echo(f"no baselines in {root}")
    for item in found:
        click.echo(
            f"{item['suite']} v{item['version']}  {item['name']}  agent {item['agent']}  "
            f"saved {item['saved_at']}  from {item['source']}"
        )
