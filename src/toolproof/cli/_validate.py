"""``toolproof validate``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Validate suites (directories with suite.yaml) and task files.

    Every problem is printed as FILE:LINE: FIELD: MESSAGE; the exit status is 1
    when any is found, 2 when a path does not exist.
    """
    from toolproof.spec import SpecError, load_suite, validate_paths
    from toolproof.tools import resolve_tools

    from ._common import load_plugins

    load_plugins()
    missing = [p for p in paths if not p.exists()]
    for path in missing:
        click.echo(f"{path}: no such file or directory", err=True)
    problems = [str(p) for p in validate_paths([p for p in paths if p.exists()])]
    checked = 0
    for path in paths:
        if path.is_dir() and (path / "suite.yaml").is_file() and not problems:
            suite = load_suite(path)
            for task in suite.tasks:
                checked += 1
                try:
                    resolve_tools(task)
                except SpecError as exc:
                    problems.extend(
                        f"{suite.task_file(task.id)}: {p.field}: {p.message}" for p in exc.problems
                    )
    for line in problems:
        click.echo(line, err=True)
    if missing:
        raise SystemExit(2)  # input error: a path that is not there (docs/cli.md exit codes)
    if problems:
        raise SystemExit(1)
    click.secho(f"ok: {', '.join(str(p) for p in paths)} valid", fg="green")
