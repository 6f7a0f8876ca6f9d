"""``toolproof validate``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Validate suites (directories with suite.yaml) and task files.

    Every problem is printed as FILE:LINE: FIELD: MESSAGE; the exit status is 1
    when any is found.
    """
    from toolproof.scoring import check_custom_imports, check_levels
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
            problems.extend(check_custom_imports(suite))
            for task in suite.tasks:
                checked += 1
                problems.extend(f"{suite.task_file(task.id)}: {p}" for p in check_levels(task))
                try:
                    resolve_tools(task)
                except SpecError as exc:
                    problems.extend(
                        f"{suite.task_file(task.id)}: {p.field}: {p.message}" for p in exc.problems
                    )
    for line in problems:
        click.echo(line, err=True)
    if problems or missing:
        raise SystemExit(1)
    click.secho(f"ok: {', '.join(str(p) for p in paths)} valid", fg="green")
