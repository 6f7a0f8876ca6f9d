"""``toolproof validate``: the checks ``run`` makes before it starts, without running."""

from __future__ import annotations

import click


@click.command()
@click.argument("targets", nargs=-1, required=True)
def validate(targets: tuple[str, ...]) -> None:
    """Validate suites and task files the way `toolproof run` loads them.

    TARGETS are built-in suite names (core), suite folders (holding suite.yaml),
    suite.yaml files, or single task files. Every problem is printed as
    FILE:LINE: FIELD: MESSAGE; the exit status is 2 when any is found, 0 when
    every target is valid.
    """
    from toolproof.engine.preflight import check_target

    from ._common import load_plugins

    load_plugins()
    problems = []
    checked = 0
    for target in targets:
        count, found = check_target(target)
        checked += count
        problems.extend(found)
    for problem in problems:
        click.echo(str(problem), err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s) found; nothing was run", err=True)
        raise SystemExit(2)
    click.secho(f"ok: {', '.join(targets)} valid ({checked} task(s) checked)", fg="green")
