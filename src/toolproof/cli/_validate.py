"""``toolproof validate``: the checks ``run`` makes before it starts, and the reference
solutions run once (a task whose own solution fails its checks is not valid)."""

from __future__ import annotations

import click


@click.command()
@click.argument("targets", nargs=-1, required=True)
@click.option(
    "--no-solutions",
    is_flag=True,
    help="Only the static checks: do not run each task's reference solution.",
)
def validate(targets: tuple[str, ...], no_solutions: bool) -> None:
    """Validate suites and task files the way `toolproof run` loads them.

    TARGETS are built-in suite names (core), suite folders (holding suite.yaml),
    suite.yaml files, or single task files. Every problem is printed as
    FILE:LINE: FIELD: MESSAGE. Once every static check passes, each task's
    reference solution runs once (the oracle agent, first seed) and must score
    perfect, as `check-task` demands on five seeds. The exit status is 2 when any
    problem is found, 0 when every target is valid.
    """
    from toolproof.engine.preflight import check_target

    from ._common import load_plugins
    from ._task_targets import collection_problems

    load_plugins()
    problems: list[object] = []
    checked = 0
    for target in targets:
        count, found = check_target(target)
        checked += count
        problems.extend(found)
    if not problems:
        for target in targets:
            problems.extend(collection_problems(target))
    if not problems and not no_solutions:
        for target in targets:
            problems.extend(solution_problems(target))
    for problem in problems:
        click.echo(str(problem), err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s) found; nothing was run", err=True)
        raise SystemExit(2)
    ran = "" if no_solutions else ", reference solutions perfect"
    click.secho(f"ok: {', '.join(targets)} valid ({checked} task(s) checked{ran})", fg="green")


def solution_problems(target: str) -> list[str]:
    """``FILE:LINE: solution: ...`` for each task of ``target`` whose reference solution
    is not perfect on the first seed (the oracle agent, as ``check-task`` runs it). Tasks
    that need a sandbox this host cannot give are skipped with a note on stderr."""
    from toolproof.engine.quality import Finding
    from toolproof.engine.quality._runs import run_agent
    from toolproof.engine.quality._verdicts import judge_oracle

    from ._run_checks import _host_backend
    from ._task_targets import location, suite_and_tasks

    suite, tasks = suite_and_tasks(target)
    ids = [t.id for t in tasks]
    try:
        backend = _host_backend(suite, ids, commands_on_host=False)
    except click.ClickException as exc:
        click.echo(f"note: reference solutions of {target} not run: {exc.message}", err=True)
        return []
    records = run_agent(suite, "oracle", 1, ids, sandbox=backend)
    found: list[str] = []
    for task in tasks:
        findings: list[Finding] = judge_oracle(task, records.get(task.id, []), epochs=1)
        found.extend(
            f"{location(suite, task, f)}: solution: {f.message} (toolproof check-task "
            f"{target} says more)"
            for f in findings
        )
    return found
