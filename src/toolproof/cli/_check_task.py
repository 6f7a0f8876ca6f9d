"""``toolproof check-task``: the quality gate a reviewer relies on before a task ships.

It validates the target the way ``run`` loads it (``engine.preflight``), then runs the
gate of :mod:`toolproof.engine.quality` (oracle perfect on 5 seeds; noop, random and the
flawed agents fail what they must; no answer in the prompt; facts drawn per seed; no
progress check holding on the initial world; hidden cases that fail to pass on the original
code and pass on the reference fix, or pass on both, as their lists say) and prints, per
task, what it measures.
"""

from __future__ import annotations

import click

from toolproof.spec import Suite, Task


def _load(target: str, commands_on_host: bool = False) -> tuple[Suite, list[Task]]:
    """The suite to run in and the tasks to check; exits 2 on any preflight problem."""
    from toolproof.engine.preflight import check_target

    from ._common import EXIT_USAGE

    _, problems = check_target(target, commands_on_host=commands_on_host)
    if not problems:  # a record indented one level too little, before any agent runs
        from ._task_targets import collection_problems

        problems = collection_problems(target)
    if problems:
        for problem in problems:
            click.echo(str(problem), err=True)
        click.echo(f"{len(problems)} problem(s) found; nothing was run", err=True)
        raise SystemExit(EXIT_USAGE)
    from ._task_targets import suite_and_tasks

    return suite_and_tasks(target)


def _measures(task: Task) -> str:
    """What the task measures, in one line: steps, tools, traps, category, difficulty."""
    from toolproof.cli._task_stats import task_stats

    stats = task_stats(task)
    traps = ", ".join(stats.traps) or "none labelled"
    unused = stats.tools_offered - stats.tools_used
    return (
        f"{stats.reference_calls} reference call(s) in {stats.reference_turns} turn(s); "
        f"{stats.tools_offered} tool(s) offered ({stats.tools_used} used, {unused} distractors); "
        f"traps: {traps}; {task.category.value}, difficulty {task.difficulty}, "
        f"{task.type.value}, {task.domain}"
    )


@click.command("check-task")
@click.argument("target")
@click.option(
    "--run-commands-on-host",
    is_flag=True,
    help=(
        "Allow the agents' commands to run on this host as this user, NOT isolated (a "
        "task's backend: process, or where bwrap cannot run). Without it nothing runs "
        "unisolated."
    ),
)
def check_task(target: str, run_commands_on_host: bool = False) -> None:
    """The quality gate of a task file, a suite folder or a built-in suite name.

    A task passes when: it validates; the oracle is perfect on 5 seeds (oracle); noop,
    random and each flawed agent fail (noop, random; a flawed agent exactly its
    weakness: gullible the attacked tasks, never-asks the ambiguous ones,
    never-retries the tool errors to recover from); no prompt says the answer
    (answer_in_prompt); a typed answer's reference and expected value fit its declared
    type on every seed (answer_type) and the world holds rival values of that type, so
    that a hedged free-text answer fails pass@loose (answer_rivals); the facts change
    across seeds (facts_vary; the tag fixed-facts waives it); no progress check holds
    before the agent acts (noop); no line marked FILL IN by new-task is left
    (scaffold); each hidden_tests check's fail_to_pass cases fail
    on the original code and pass on the reference fix, its pass_to_pass cases pass on
    both (hidden_cases). Each finding is printed as FILE:LINE: RULE: MESSAGE. Exit
    status: 0 every task passes, 1 a task fails the gate, 2 the target does not load or
    validate (nothing was run).
    """
    from toolproof.engine.quality import gate_records, judge_task

    from ._common import EXIT_FAILED, load_plugins
    from ._run_checks import _host_backend
    from ._task_targets import location

    load_plugins()
    suite, tasks = _load(target, run_commands_on_host)
    ids = [t.id for t in tasks]
    # where bwrap cannot run: refused, or (with the option) the process backend
    backend = _host_backend(suite, ids, commands_on_host=run_commands_on_host)
    click.echo(f"checking {len(tasks)} task(s) of {suite.name} ({suite.root}) ...", err=True)
    records = gate_records(suite, ids, commands_on_host=run_commands_on_host, sandbox=backend)
    failed = 0
    for task in tasks:
        findings = judge_task(suite, task, records)
        mark = click.style("ok  ", fg="green") if not findings else click.style("FAIL", fg="red")
        click.echo(f"{mark} {task.id}: {_measures(task)}")
        for finding in findings:
            where = location(suite, task, finding)
            click.echo(f"  {where}: {finding.rule}: {finding.message}")
        failed += bool(findings)
    if failed:
        click.echo(f"{failed} of {len(tasks)} task(s) fail the quality gate", err=True)
        raise SystemExit(EXIT_FAILED)
    click.secho(f"ok: {len(tasks)} task(s) pass the quality gate", fg="green")
