"""``toolproof env setup SUITE`` and ``toolproof env check SUITE``: pinned tool environments."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from toolproof.envs import EnvStatus, HarnessRun
    from toolproof.spec import Suite

_CACHE_HELP = "Environment cache (default ~/.cache/toolproof/envs)."


@click.group()
def env() -> None:
    """Set up and check the pinned tool environments a suite's tasks run with.

    \b
    Examples:
      toolproof env setup lint            # install once into the cache (needs the registries)
      toolproof env check lint            # is everything set up, and as pinned?
      toolproof env setup lint --record   # after bumping a pin: rewrite the version files
    """


def _cache(value: Path | None) -> Path | None:
    return value.expanduser().resolve() if value is not None else None


def initial_run(suite: Suite, task_id: str, status: EnvStatus) -> HarnessRun:
    """The harness's linter run on a task's initial state (epoch 0), with its environment."""
    from toolproof.envs import run_harness, sandbox_settings
    from toolproof.spec import effective_sandbox, render
    from toolproof.spec.lint_checks import LintCheck
    from toolproof.tools.toolkits.shell import backend_name
    from toolproof.worlds import World

    instance = render(
        suite.task(task_id),
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=0,
        limits=suite.config.limits,
        system_prompt="",
    )
    task = instance.task
    lint = next((c for c in task.success if isinstance(c, LintCheck)), None)
    if lint is None or status.directory is None:
        raise click.ClickException(f"task {task_id}: it has no lint check to count errors with")
    base = effective_sandbox(None, suite.config.sandbox, task.sandbox)
    settings = sandbox_settings(status, status.directory, base)
    with World(task.world, fixtures_base=suite.task_file(task_id).parent) as world:
        assert world.workspace is not None
        return run_harness(
            world.workspace.root,
            settings,
            backend=backend_name(settings),
            linter=lint.linter,
            config=lint.config,
            paths=lint.paths,
            verify=lint.verify,
            timeout_s=lint.timeout_s,
        )


def _baselines(suite: Suite, status: EnvStatus, task_ids: list[str]) -> dict[str, int]:
    """Count each task's starting errors; refuse a task whose linter or tests fail to run."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = pool.map(lambda t: initial_run(suite, t, status), task_ids)
        runs = dict(zip(task_ids, found, strict=True))
    counts: dict[str, int] = {}
    for task_id, run in runs.items():
        if run.report.errors is None:
            raise click.ClickException(f"task {task_id}: {run.report.detail}")
        if run.verify:
            failed = run.verify[0]
            raise click.ClickException(
                f"task {task_id}: `{failed['command']}` fails on the task's initial state "
                f"(exit {failed['exit_code']}):\n{failed['output']}"
            )
        counts[task_id] = run.report.errors
    return counts


@env.command()
@click.argument("suite")
@click.option("--env-cache", type=click.Path(path_type=Path), envvar="TOOLPROOF_ENV_CACHE",
              help=_CACHE_HELP)  # fmt: skip
@click.option("--force", is_flag=True, help="Install again even when set up already.")
@click.option(
    "--record",
    is_flag=True,
    help="Rewrite the version files from what got installed and the counts found.",
)
def setup(suite: str, env_cache: Path | None, force: bool, record: bool) -> None:
    """Install SUITE's pinned tools into the cache (once) and check each task's starting count.

    This is the only step that reaches a package registry; runs never install anything.
    """
    from toolproof.envs import inspect_env, setup_env, suite_locks
    from toolproof.spec import load_suite

    loaded = load_suite(suite)
    cache = _cache(env_cache)
    locks = suite_locks(loaded)
    if not locks:
        click.echo(f"suite {loaded.name!r} pins no tool environment; nothing to set up")
        return
    problems: list[str] = []
    for lock_path, task_ids in sorted(locks.items()):
        done = setup_env(lock_path, cache, force=force, record=record, log=click.echo)
        what = "installed" if done.installed else "reused"
        click.echo(f"{done.lock.name}: {what} in {done.seconds:.1f} s: {done.directory}")
        for change in done.changes:
            click.echo(f"  recorded: {change}")
        status = inspect_env(lock_path, cache)
        counts = _baselines(loaded, status, sorted(task_ids))
        recorded = status.lock.baseline
        if record:
            status.lock.model_copy(update={"baseline": counts}).save(lock_path)
            click.echo(f"  recorded starting counts of {len(counts)} tasks in {lock_path}")
            continue
        wrong = [
            f"{t}: the version file records {recorded.get(t)}, the linter finds {n}"
            for t, n in counts.items()
            if recorded.get(t) != n
        ]
        if wrong:
            problems.append(f"{lock_path}: starting error counts differ:\n  " + "\n  ".join(wrong))
        else:
            click.echo(f"  {len(counts)} tasks start with the recorded error counts")
    if problems:  # a verdict, not bad input: exit 1 (docs/cli.md exit codes)
        hint = "if the tasks changed on purpose, record the counts with --record"
        click.echo("Error: " + "\n".join([*problems, hint]), err=True)
        raise SystemExit(1)


@env.command()
@click.argument("suite")
@click.option("--env-cache", type=click.Path(path_type=Path), envvar="TOOLPROOF_ENV_CACHE",
              help=_CACHE_HELP)  # fmt: skip
def check(suite: str, env_cache: Path | None) -> None:
    """Say whether SUITE's environments are set up and exactly as pinned (exit 1 if not)."""
    from toolproof.envs import inspect_env, setup_hint, suite_locks
    from toolproof.spec import load_suite

    loaded = load_suite(suite)
    bad = 0
    for lock_path, task_ids in sorted(suite_locks(loaded).items()):
        status = inspect_env(lock_path, _cache(env_cache))
        name = f"{status.lock.name} ({len(task_ids)} tasks)"
        if status.directory is None:
            click.echo(f"{name}: not set up; run `{setup_hint(loaded)}`")
        elif status.changes:
            click.echo(f"{name}: DRIFT (pinned → live) in {status.directory}")
            for change in status.changes:
                click.echo(f"  {change}")
        else:
            click.echo(f"{name}: ready, digest {status.live_digest} in {status.directory}")
            continue
        bad += 1
    if bad:
        raise SystemExit(1)
