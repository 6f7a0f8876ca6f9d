"""``toolproof compare``: before/after table of two runs, flipped tasks, a regression gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from toolproof.metrics.compare import Comparison, Flip, MetricChange

REGRESSION_EXIT = 1
"""Exit status when a gate fails: B significantly worse under ``--fail-on-regression``,
or a comparison that cannot gate (a run scored nothing; gated: B scored fewer
episodes or the runs cover different tasks)."""

_RATES = {
    "success",
    "pass_loose",
    "hallucination",
    "fraction",
    "valid_arguments_rate",
    "redundancy_rate",
}
_VERDICT_STYLE = {"better": "green", "worse": "red", "same": "dim", "n/a": "dim"}


def _fmt(name: str, value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    sign = "+" if signed and value > 0 else ""
    if name in _RATES:
        return f"{sign}{100 * value:.1f}{'pp' if signed else '%'}"
    if name == "cost_usd":
        return f"{sign}${value:.4f}"
    return f"{sign}{value:.3g}"


def _test_text(row: MetricChange) -> str:
    if row.p_value is None:
        return "-"
    return f"p={row.p_value:.3g}"


def _flip_line(flip: Flip) -> str:
    mode = flip.b_failure_mode if flip.b_level in ("fail", "partial") else flip.a_failure_mode
    why = f"  ({mode})" if mode else ""
    return escape(f"  {flip.task}#{flip.epoch}: {flip.a_level} -> {flip.b_level}{why}")


def print_comparison(comparison: Comparison, console: Console, *, gate: str = "success") -> None:
    """Print the before/after table and the flipped task instances."""
    from rich.table import Table

    a, b = comparison.a, comparison.b
    binary = [r for r in comparison.metrics if r.test == "mcnemar" and r.n]
    console.print(f"[bold]A[/] {a['run']}  agent {a['agent']}  {a['suite']} v{a['version']}")
    console.print(f"[bold]B[/] {b['run']}  agent {b['agent']}  {b['suite']} v{b['version']}")
    if comparison.varied is not None:
        console.print(escape(f"the runs differ in {comparison.varied}"))
    for reason in comparison.mismatches:
        console.print(f"[yellow]warning: {reason} (compared anyway: --allow-mismatch)[/]")
    for label, cov in (("A", comparison.coverage_a), ("B", comparison.coverage_b)):
        if cov is not None:
            console.print(
                f"{label}: {cov.scored} scored of {cov.episodes} episodes "
                f"({cov.infra_errors} infrastructure errors), {len(cov.tasks)} tasks"
            )
    console.print(
        f"{comparison.paired} paired task instances; only in A {comparison.only_a}, "
        f"only in B {comparison.only_b}, infra errors excluded {comparison.infra_excluded}"
    )
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("metric", "better", "A", "B", "change", "test", "significant"):
        table.add_column(column)
    for row in comparison.metrics:
        style = _VERDICT_STYLE.get(row.verdict, "white")
        mark = "*" if row.name == gate else ""
        table.add_row(
            row.name + mark,
            "higher" if row.higher_is_better else "lower",
            _fmt(row.name, row.a),
            _fmt(row.name, row.b),
            _fmt(row.name, row.change, signed=True),
            _test_text(row),
            f"[{style}]{'yes, ' + row.verdict if row.significant else 'no'}[/]",
        )
    console.print(table)
    console.print(
        f"[dim]* gate metric; better: the direction that is an improvement; significant at "
        f"p < {comparison.alpha:g} (pass/fail metrics: exact McNemar over paired instances; "
        "others: paired bootstrap over tasks, from 6 tasks on; calls, time, tokens and cost "
        "over instances passed in both runs)[/]"
    )
    for row in binary:
        console.print(
            f"[dim]{row.name}: {row.a_only} only in A, {row.b_only} only in B (discordant pairs)[/]"
        )
    console.print(f"[bold]regressions[/] (passed in A, failed in B): {len(comparison.regressions)}")
    for flip in comparison.regressions:
        console.print(f"[red]{_flip_line(flip)}[/]")
    console.print(
        f"[bold]improvements[/] (failed in A, passed in B): {len(comparison.improvements)}"
    )
    for flip in comparison.improvements:
        console.print(f"[green]{_flip_line(flip)}[/]")


def check_metric(metric: str) -> str:
    """Validate a ``--metric`` name.

    Raises:
        click.BadParameter: unknown name, listing the known ones.
    """
    from toolproof.metrics.compare import METRICS

    if metric not in METRICS:
        raise click.BadParameter(
            f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}", param_hint="--metric"
        )
    return metric


def finish(
    comparison: Comparison,
    *,
    metric: str,
    json_out: Path | None,
    fail_on_regression: bool,
    allow_partial: bool = False,
) -> None:
    """Print, export, and exit with :data:`REGRESSION_EXIT` when a gate fails.

    A run that scored nothing fails whatever the options (there is no
    comparison); with ``fail_on_regression``, so do a candidate that scored fewer
    episodes than the baseline and runs that cover different tasks (unless
    ``allow_partial``), and a significant regression on ``metric``.
    """
    from rich.console import Console

    console = Console()
    print_comparison(comparison, console, gate=metric)
    failures = comparison.gate_failures(allow_partial=allow_partial or not fail_on_regression)
    if json_out is not None:
        data = comparison.to_dict()
        data["gate"] = {
            "metric": metric,
            "regressed": comparison.regressed(metric),
            "problems": failures,
        }
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        console.print(f"comparison written to {json_out}")
    warned = [p for p in comparison.problems if p not in failures]
    for problem in warned:
        console.print(f"[yellow]warning: {escape(problem)}[/]")
    if failures:
        console.print("[bold red]the comparison cannot gate:[/]")
        for problem in failures:
            console.print(f"[red]  - {escape(problem)}[/]", soft_wrap=True)
        if comparison.partial and not comparison.fatal:
            console.print(
                "fix: rerun the missing episodes (toolproof run --resume), or pass "
                "--allow-partial to gate on the shared task instances only"
            )
        else:
            console.print("fix: rerun once the infrastructure errors are resolved")
        raise click.exceptions.Exit(REGRESSION_EXIT)
    if comparison.regressed(metric):
        console.print(f"[bold red]B is significantly worse than A on {metric}[/]")
        if fail_on_regression:
            raise click.exceptions.Exit(REGRESSION_EXIT)
    else:
        console.print(f"no significant regression on {metric}")
        _too_few_note(comparison, metric, console)


def _too_few_note(comparison: Comparison, metric: str, console: Console) -> None:
    """Say so when B lost instances on a pass/fail gate but too few could ever be significant."""
    from toolproof.metrics.stats import mcnemar_exact

    row = comparison.metric(metric)
    if row.test != "mcnemar" or not row.a_only or row.b_only is None:
        return
    needed = next(n for n in range(1, 64) if mcnemar_exact(n, 0) < comparison.alpha)
    if row.a_only + row.b_only < needed:
        console.print(
            f"[yellow]note: {row.a_only} instances lost on {metric}, but the exact McNemar "
            f"test needs at least {needed} discordant pairs to reach p < {comparison.alpha:g}; "
            "run more epochs or tasks for a gate that can fail[/]",
            soft_wrap=True,
        )


_RUN_DIR = click.Path(path_type=Path, exists=True, file_okay=False)

ALLOW_PARTIAL = click.option(
    "--allow-partial",
    is_flag=True,
    help="Let the gate pass on the shared task instances when B scored fewer episodes "
    "or the runs cover different tasks (a run that scored nothing still fails).",
)


@click.command()
@click.argument("run_a", type=_RUN_DIR)
@click.argument("run_b", type=_RUN_DIR)
@click.option(
    "--json",
    "json_out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the comparison as JSON.",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help=f"Exit {REGRESSION_EXIT} when B is significantly worse, scored fewer episodes "
    "than A, or the runs cover different tasks.",
)
@click.option(
    "--metric", default="success", show_default=True, help="Metric the regression gate looks at."
)
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Compare runs of different suite versions, seeds or tracks.",
)
@ALLOW_PARTIAL
def compare(
    run_a: Path,
    run_b: Path,
    json_out: Path | None,
    fail_on_regression: bool,
    metric: str,
    allow_mismatch: bool,
    allow_partial: bool,
) -> None:
    """Compare RUN_B (after) with RUN_A (before), paired task instance by task instance.

    \b
    Success and other pass/fail metrics use the exact McNemar test; continuous
    metrics a paired bootstrap over tasks. Exit status: 1 when either run scored
    no episode; with --fail-on-regression also 1 when B is significantly worse
    on --metric, scored fewer episodes than A, or covers different tasks; else 0.
    A comparison refused as mismatched exits 2.
    """
    from toolproof.metrics.compare import compare_runs

    check_metric(metric)
    try:
        comparison = compare_runs(run_a, run_b, allow_mismatch=allow_mismatch)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    finish(
        comparison,
        metric=metric,
        json_out=json_out,
        fail_on_regression=fail_on_regression,
        allow_partial=allow_partial,
    )
