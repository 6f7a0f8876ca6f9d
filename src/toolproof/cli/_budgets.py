"""The run's budgets on the command line: ``--limit``, ``--sample``, ``--max-tokens``,
``--max-cost`` (engine/config.py ``BUDGETS``; the runner stops at the spend ones)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """``value`` unless it is NaN or infinite (click's FloatRange lets NaN through)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value!r} is not a finite number", ctx=ctx, param=param)
    return value


def budget_options(command: F) -> F:
    """Add the four budget options to ``command`` (parameters limit, sample, max_tokens,
    max_cost)."""
    options = [
        click.option(
            "--limit",
            type=click.IntRange(min=1),
            help="Budget: only the first N selected tasks (a resume may raise it).",
        ),
        click.option(
            "--sample",
            type=click.IntRange(min=1),
            help="Budget: N selected tasks drawn with the run's seed (a resume may raise it).",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(min=1),
            help=(
                "Budget: start no episode once the agent's tokens reached this; the run "
                "stops cleanly, marked incomplete with the reason (a resume may raise it)."
            ),
        ),
        click.option(
            "--max-cost",
            "max_cost",
            type=click.FloatRange(min=0.0, min_open=True),
            callback=_finite,
            metavar="USD",
            help=(
                "Budget: start no episode once the agent's priced cost reached USD; the run "
                "stops cleanly, marked incomplete with the reason (a resume may raise it)."
            ),
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def budget_fields(
    fields: dict[str, Any],
    *,
    resuming: bool,
    limit: int | None,
    sample: int | None,
    max_tokens: int | None,
    max_cost: float | None,
) -> None:
    """Set the budgets in a run's config ``fields``; a resume keeps the run's own unless
    given again (so it may raise them)."""
    budgets: dict[str, float | None] = {
        "limit": limit,
        "sample": sample,
        "max_tokens": max_tokens,
        "max_cost_usd": max_cost,
    }
    for name, bound in budgets.items():
        if not resuming or bound is not None:
            fields[name] = bound
