"""``toolproof run``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

    from toolproof.engine import RunConfig
    from toolproof.spec import Suite

from ._common import default_run_dir, load_plugins, parse_agent_args, provider_options


@click.command()
@click.argument("suite", required=False)
@click.option(
    "--agent", "-a", help="Agent spec: oracle, noop, random, python:module:attr, openai:MODEL, ..."
)
@click.option(
    "--agent-arg", "agent_args", multiple=True, help="Agent option key=value (repeatable)."
)
@click.option(
    "--epochs",
    "-k",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs per task.",
)
@click.option("--seed", type=int, default=None, help="Override the suite's seed.")
@click.option(
    "--parallel",
    "-p",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Episodes in flight.",
)
@click.option(
    "--task",
    "-t",
    "tasks",
    multiple=True,
    help="Only tasks whose id matches this glob (repeatable).",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    help="Run directory (default runs/SUITE-AGENT-TIME).",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Finish a killed run.",
)
@click.option(
    "--system-prompt",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Custom system prompt file (a separate track in results).",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Retries of episodes that end in infra_error.",
)
@click.option("--no-snapshots", is_flag=True, help="Do not store per-step world snapshots.")
@click.option(
    "--cache",
    type=click.Path(path_type=Path, file_okay=False),
    help="Model-call cache: record every model request and reply here; replay them later.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where episodes run: this process, or a Ray cluster.",
)
@click.option("--ray-address", help="Ray cluster address (default: start a local Ray instance).")
@click.option(
    "--max-model-calls",
    type=click.IntRange(min=1),
    help="At most this many model calls (agent turns) at once, across episodes.",
)
@click.option(
    "--max-sandboxes",
    type=click.IntRange(min=1),
    help="At most this many sandboxed commands at once, across episodes.",
)
@click.option(
    "--sandbox",
    metavar="BACKEND",
    help=(
        "Sandbox backend of run_command for tasks that name none: bwrap, process "
        "(NOT isolated), podman, docker.  [default: bwrap where it works, else process]"
    ),
)
@click.option(
    "--allow-drift",
    is_flag=True,
    help="Run tasks whose pinned tool environment differs from its version file.",
)
@click.option(
    "--env-cache",
    type=click.Path(path_type=Path),
    envvar="TOOLPROOF_ENV_CACHE",
    help="Cache of pinned tool environments (default ~/.cache/toolproof/envs).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or task table.")
@click.pass_context
def run(
    ctx: click.Context,
    suite: str | None,
    agent: str | None,
    agent_args: tuple[str, ...],
    epochs: int,
    seed: int | None,
    parallel: int,
    tasks: tuple[str, ...],
    out: Path | None,
    resume: Path | None,
    system_prompt: Path | None,
    retries: int,
    no_snapshots: bool,
    cache: Path | None,
    executor: str,
    ray_address: str | None,
    max_model_calls: int | None,
    max_sandboxes: int | None,
    sandbox: str | None,
    allow_drift: bool,
    env_cache: Path | None,
    quiet: bool,
) -> None:
    """Run SUITE (a built-in name or a directory) against an agent and score every episode.

    \b
    Examples:
      toolproof run core --agent oracle
      toolproof run core --agent random --epochs 3 --seed 7
      toolproof run --resume runs/core-oracle-20261130-101500
    """
    from rich.console import Console

    from toolproof.engine import RunConfig, Runner
    from toolproof.report import print_summary
    from toolproof.results import RunReader
    from toolproof.spec import load_suite, resolve_suite_path
    from toolproof.spec.providers import split_name

    load_plugins()
    given = {
        name
        for name in (
            "agent",
            "agent_args",
            "epochs",
            "seed",
            "tasks",
            "system_prompt",
            "no_snapshots",
            "suite",
            "sandbox",
        )
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    }
    fields: dict[str, Any] = {}
    if resume is not None:
        with RunReader(resume) as reader:
            fields = dict(reader.meta().get("config", {}))
        run_dir = resume
    if suite is not None or resume is None:
        if suite is None:
            raise click.UsageError("give a SUITE (e.g. core) or --resume RUN_DIR")
        provided = split_name(suite) is not None and not Path(suite).exists()
        fields["suite"] = suite if provided else str(resolve_suite_path(suite))
    if resume is None or "agent" in given:
        if agent is None:
            raise click.UsageError("give --agent (e.g. --agent oracle); see `toolproof list`")
        fields["agent"] = agent
    if resume is None or "agent_args" in given:
        fields["agent_options"] = parse_agent_args(agent_args)
    if resume is None or "epochs" in given:
        fields["epochs"] = epochs
    if resume is None or "seed" in given:
        fields["seed"] = seed
    if resume is None or "tasks" in given:
        fields["tasks"] = list(tasks)
    if resume is None or "system_prompt" in given:
        fields["system_prompt"] = (
            system_prompt.read_text(encoding="utf-8") if system_prompt else None
        )
    if resume is None or "no_snapshots" in given:
        fields["snapshots"] = not no_snapshots
    if cache is not None:
        fields["agent_options"] = {**fields.get("agent_options", {}), "cache": str(cache.resolve())}
    fields["agent_options"] = provider_options(fields["agent"], fields.get("agent_options", {}))
    fields["retries"] = retries
    fields["max_model_calls"] = max_model_calls
    fields["max_sandboxes"] = max_sandboxes
    loaded = load_suite(fields["suite"], allow_drift=allow_drift)
    if resume is None or "sandbox" in given:
        fields["sandbox"] = sandbox or _host_backend(loaded)
    fields["allow_drift"] = allow_drift
    fields["env_cache"] = str(env_cache.expanduser().resolve()) if env_cache else None
    config = RunConfig.model_validate(fields)
    if resume is None:
        run_dir = out or default_run_dir(Path(config.suite).name.replace(":", "-"), config.agent)

    console = Console(stderr=True, quiet=quiet)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("passed {task.fields[passed]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet,
    )
    counter = {"passed": 0}

    executor_options = {"address": ray_address} if ray_address else {}
    runner = Runner(
        config,
        run_dir,
        parallel=parallel,
        executor_name=executor,
        executor_options=executor_options,
        suite=loaded,
    )
    from toolproof.engine import plan
    from toolproof.results import RunStore

    _warn_unisolated(runner.suite, config, Console(stderr=True))  # even with --quiet
    from toolproof.envs import check_suite  # pinned tool environments: set up and undrifted

    check_suite(
        runner.suite,
        config.select(runner.suite),
        cache_root=Path(config.env_cache) if config.env_cache else None,
        allow_drift=config.allow_drift,
        warn=lambda text: Console(stderr=True).print(f"[bold yellow]WARNING: {text}[/]"),
    )

    if resume is not None:
        store = RunStore(run_dir)
        try:
            runner.check_resumable(store)
            done = len(store.keys())
        finally:
            store.close()
    else:
        done = 0
    total = len(plan(config, runner.suite))
    with progress:
        bar = progress.add_task(
            f"{runner.suite.name} / {config.agent}", total=total, passed=0, completed=done
        )

        def on_episode(record: Any) -> None:
            counter["passed"] += int(record.score.passed)
            progress.update(bar, advance=1, passed=counter["passed"])

        runner.on_episode = on_episode
        asyncio.run(runner.run())
    if not quiet:
        print_summary(run_dir, Console())
    click.echo(f"results: {run_dir}")


def _host_backend(suite: Suite) -> str | None:
    """``default_backend()`` for a suite that runs commands (None for one that does not),
    without its RuntimeWarning: ``_warn_unisolated`` says it louder."""
    import warnings

    from toolproof.sandbox import default_backend
    from toolproof.tools import resolve_tools
    from toolproof.tools.toolkits.shell import offers_commands

    if not any(offers_commands(resolve_tools(task)) for task in suite.tasks):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return default_backend()


def _warn_unisolated(suite: Suite, config: RunConfig, console: Console) -> None:
    """Print a loud warning when tasks of this run would run commands without isolation.

    Raises:
        click.BadParameter: A backend name is not registered.
    """
    from toolproof.sandbox import SandboxError, get_backend
    from toolproof.spec import effective_sandbox
    from toolproof.tools import resolve_tools
    from toolproof.tools.toolkits.shell import backend_name, offers_commands

    exposed: dict[str, list[str]] = {}
    selected = set(config.select(suite))
    for task in suite.tasks:
        if task.id not in selected or not offers_commands(resolve_tools(task)):
            continue
        settings = effective_sandbox(config.sandbox, suite.config.sandbox, task.sandbox)
        try:
            backend = get_backend(backend_name(settings))
        except SandboxError as exc:
            raise click.BadParameter(str(exc), param_hint="--sandbox / sandbox.backend") from None
        if not backend.isolated:
            exposed.setdefault(backend.name, []).append(task.id)
    for name, tasks in exposed.items():
        bwrap = get_backend("bwrap").unavailable_reason()
        why = f" (bubblewrap cannot be used here: {bwrap})" if bwrap else ""
        console.print(
            f"[bold red]WARNING: {len(tasks)} task(s) run commands with the {name!r} sandbox "
            f"backend{why}: commands are NOT isolated; they run on this host as this user, "
            "with its files and network. Use --sandbox bwrap (apt-get install bubblewrap) "
            "for untrusted agents.[/]"
        )
