"""``toolproof run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._budgets import budget_fields, budget_options
from ._common import (
    default_run_dir,
    load_plugins,
    parse_agent_args,
    provider_options,
    suite_index_file,
)
from ._gate import DEFAULT_MAX_INFRA
from ._live import open_live_run
from ._model import GATEWAY_KINDS, gateway_options, side_options
from ._progress import MODES
from ._run_checks import (
    _attack_of,
    _host_backend,
    _refuse_unisolated,
    _refuse_used,
    _say_user_fallback,
    _share,
    _warn_unisolated,
    _with_attack,
)
from ._run_exec import _execute, _finish, _place, _store_overview
from ._targets import task_file_target


@click.command()
@click.argument("suite", required=False)
@click.option(
    "--agent", "-a", help="Agent spec: oracle, noop, random, python:module:attr, openai:MODEL, ..."
)
@click.option(
    "--agent-arg", "agent_args", multiple=True, help="Agent option key=value (repeatable)."
)
@click.option(
    "--model",
    "-m",
    metavar="PROVIDER:MODEL",
    help=(
        "The model of a langchain/llamaindex/autogen/cmd agent, reached through toolproof's "
        "model gateway: openai:gpt-4o-mini, anthropic:claude-haiku-4-5, "
        "openai-compatible:NAME@http://host:port/v1."
    ),
)
@click.option(
    "--allow-other-models",
    is_flag=True,
    help=(
        "Let a langchain/llamaindex/autogen/cmd agent call models other than --model through "
        "the model gateway (each call recorded and priced as the model it names); without "
        "it another model is refused, as the agent's error."
    ),
)
@click.option(
    "--user-model",
    metavar="PROVIDER:MODEL",
    help=(
        "The model that plays the user of tasks with `user.simulator: model`, through the "
        "model gateway (same syntax as --model); without it the scripted user plays them."
    ),
)
@click.option(
    "--judge-model",
    metavar="PROVIDER:MODEL",
    help=(
        "The model of every judge check, overriding the tasks' own, through the model "
        "gateway (openai: or openai-compatible:)."
    ),
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
    help=(
        "Episodes in flight. From 64, with more episodes than that to run, the run "
        "chooses worker processes and the agent's loop itself where safe, and says so."
    ),
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
    help="Where episodes run: this process, or a Ray cluster (its actors share out "
    "--max-model-calls and --max-sandboxes, as --workers do).",
)
@click.option("--ray-address", help="Ray cluster address (default: start a local Ray instance).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    help=(
        "Local executor: worker processes running episodes (every core: the number of "
        "cores). Pays off for runs of many fast episodes; each worker takes ~1-3 s to start. "
        "--max-model-calls and --max-sandboxes are shared out between them. Given, it wins "
        "over the run's own choice (see --parallel).  [default: 1, or one per core]"
    ),
)
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
        "Sandbox backend of run_command for tasks that name none: bwrap, podman, docker, "
        "container (podman, else docker), or process (NOT isolated: needs "
        "--run-commands-on-host).  [default: bwrap]"
    ),
)
@click.option(
    "--run-commands-on-host",
    is_flag=True,
    help=(
        "Allow commands (run_command, cmd: agents, reference solutions) to run on this host "
        "as this user, NOT isolated: --sandbox process, a task's or suite's backend: "
        "process, or the process backend where bwrap cannot run. Without it nothing runs "
        "unisolated."
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
@click.option(
    "--max-infra-errors",
    "max_infra",
    type=click.FloatRange(0.0, 1.0),
    callback=lambda ctx, param, value: _share(value),
    default=DEFAULT_MAX_INFRA,
    show_default=True,
    help="Largest share of episodes that may be infra errors; above it the run exits 3.",
)
@click.option(
    "--progress",
    "progress_mode",
    type=click.Choice(MODES),
    default="auto",
    show_default=True,
    help=(
        "rich: a live bar; plain: a line every 10 s or 10% (CI logs); json: one JSON event "
        "per episode on stdout; none. auto: rich on a terminal, else plain."
    ),
)
@click.option("--json", "json_progress", is_flag=True, help="Same as --progress json.")
@click.option(
    "--live",
    type=click.Choice(["replay", "record"]),
    default="replay",
    show_default=True,
    help="Live tasks: replay cassettes (offline), or record the real services into the run.",
)
@click.option(
    "--cassettes",
    type=click.Path(path_type=Path, exists=True),
    multiple=True,
    help="Cassette file or directory to replay (default: the suite's shipped cassettes).",
)
@click.option(
    "--attack",
    metavar="NAME",
    help=(
        "Place this attack's injections (a suite built from a package that has attacks: "
        "agentdojo --attack important_instructions); recorded in the run's config."
    ),
)
@budget_options
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help=(
        "An evaluation file: run its matrix of suites x agents x models, one run folder "
        "per cell (default: ./toolproof.yaml when no SUITE and no --resume is given)."
    ),
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary table.")
@click.pass_context
def run(
    ctx: click.Context,
    suite: str | None,
    agent: str | None,
    agent_args: tuple[str, ...],
    model: str | None,
    allow_other_models: bool,
    user_model: str | None,
    judge_model: str | None,
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
    workers: int,
    max_model_calls: int | None,
    max_sandboxes: int | None,
    sandbox: str | None,
    run_commands_on_host: bool,
    allow_drift: bool,
    env_cache: Path | None,
    max_infra: float,
    progress_mode: str,
    json_progress: bool,
    live: str,
    cassettes: tuple[Path, ...],
    attack: str | None,
    limit: int | None,
    sample: int | None,
    max_tokens: int | None,
    max_cost: float | None,
    config_file: Path | None,
    quiet: bool,
) -> None:
    """Run SUITE (a built-in name or a directory) against an agent and score every episode.

    \b
    Examples:
      toolproof run core --agent oracle
      toolproof run core --agent random --epochs 3 --seed 7
      toolproof run --resume runs/core-oracle-20261130-101500-3fa9c2
      toolproof run live --agent oracle --live record
      toolproof run agentdojo:banking --agent gullible --attack important_instructions

    Ctrl-C stops the run: finished episodes are kept, the summary is marked
    incomplete and the command to continue is printed (a second Ctrl-C quits
    at once). Exit status: 0 ok, 2 bad input, 3 the run is incomplete or has no
    scored episodes or too many infra errors (see docs/cli.md).
    """
    load_plugins()  # first: before the first pydantic model (see load_plugins)
    from rich.console import Console

    from toolproof.engine import RunConfig, Runner
    from toolproof.engine.preflight import load_checked_suite
    from toolproof.results import RunReader
    from toolproof.spec import resolve_suite_path
    from toolproof.spec.providers import is_provided

    if suite is None and resume is None:
        from ._config import OVERRIDABLE, find_config, run_matrix

        evaluation = find_config(config_file)
        if evaluation is not None:  # an evaluation file: its matrix, command line on top
            source = click.core.ParameterSource.COMMANDLINE
            params = {
                n: ctx.params[n] for n in OVERRIDABLE if ctx.get_parameter_source(n) is source
            }
            run_matrix(ctx, evaluation, params)
            return
    elif config_file is not None:
        raise click.UsageError("--config runs an evaluation file: give no SUITE or --resume")
    given = {
        name
        for name in (
            "agent",
            "agent_args",
            "model",
            "user_model",
            "judge_model",
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
        try:
            with RunReader(resume) as reader:
                fields = dict(reader.meta().get("config", {}))
        except FileNotFoundError as exc:
            raise click.BadParameter(
                f"{exc}; --resume takes the folder of an earlier `toolproof run`",
                param_hint="--resume",
            ) from None
        run_dir = resume
    if suite is not None and (one := task_file_target(suite)) is not None:
        suite, tasks = one[0], (*tasks, one[1])  # a task file: its suite, that task
    if suite is not None or resume is None:
        if suite is None:
            raise click.UsageError(
                "give a SUITE (e.g. core), --resume RUN_DIR, or --config FILE (an evaluation "
                "file; ./toolproof.yaml is found by itself)"
            )
        fields["suite"] = suite if is_provided(suite) else str(resolve_suite_path(suite))
    if attack is not None:
        fields["suite"] = _with_attack(str(fields["suite"]), attack)
    if resume is None or attack is not None or suite is not None:
        fields["attack"] = _attack_of(str(fields["suite"]))
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
    if resume is None or "model" in given:
        fields["model"] = model
    if cache is not None:
        fields["agent_options"] = {**fields.get("agent_options", {}), "cache": str(cache.resolve())}
    fields["agent_options"] = gateway_options(
        fields["agent"],
        fields.get("model"),
        provider_options(fields["agent"], fields.get("agent_options", {})),
    )
    if allow_other_models:  # recorded in the run's agent options, so a resume keeps it
        if str(fields["agent"]).partition(":")[0] not in GATEWAY_KINDS:
            raise click.BadParameter(
                f"--agent {fields['agent']!r} does not call its model through the model "
                f"gateway; the option is for {', '.join(sorted(GATEWAY_KINDS))} agents",
                param_hint="--allow-other-models",
            )
        fields["agent_options"] = {**fields["agent_options"], "allow_other_models": True}
    if sandbox is not None and str(fields["agent"]).partition(":")[0] == "cmd":
        # cmd agents run in the run's sandbox too (their own --agent-arg sandbox wins).
        fields["agent_options"] = {"sandbox": sandbox, **fields["agent_options"]}
    for role, value in (("user", user_model), ("judge", judge_model)):
        if resume is None or f"{role}_model" in given:
            fields[f"{role}_model"] = value
    cached = str(cache.resolve()) if cache is not None else None
    if cached is None and resume is not None:  # a resumed run keeps its cache
        cached = fields.get("agent_options", {}).get("cache")
    fields["side_models"] = {
        role: side_options(role, fields[f"{role}_model"], cached)
        for role in ("user", "judge")
        if fields.get(f"{role}_model")
    }
    fields["retries"] = retries
    budget_fields(  # --limit, --sample, --max-tokens, --max-cost
        fields,
        resuming=resume is not None,
        limit=limit,
        sample=sample,
        max_tokens=max_tokens,
        max_cost=max_cost,
    )
    fields["max_model_calls"] = max_model_calls
    fields["max_sandboxes"] = max_sandboxes
    loaded = load_checked_suite(  # the same loader and checks as validate
        fields["suite"],
        allow_drift=allow_drift,
        tasks=fields.get("tasks") or (),
        index_file=suite_index_file(),  # only the selected tasks' files, once all passed
        commands_on_host=run_commands_on_host,
    )
    if resume is None or "sandbox" in given:
        fields["sandbox"] = sandbox or _host_backend(
            loaded, fields.get("tasks") or (), commands_on_host=run_commands_on_host
        )
    fields["run_commands_on_host"] = run_commands_on_host  # asked again on every invocation
    _refuse_unisolated(fields, commands_on_host=run_commands_on_host)
    fields["allow_drift"] = allow_drift
    fields["env_cache"] = str(env_cache.expanduser().resolve()) if env_cache else None
    config = RunConfig.model_validate(fields)
    _say_user_fallback(loaded, config, quiet=quiet)
    if resume is None:
        label = Path(config.suite).name.replace(":", "-").replace("@", "-")
        run_dir = out or default_run_dir(label, config.agent)
        _refuse_used(run_dir)
    live_run = open_live_run(loaded, config, run_dir, live, list(cassettes), executor)
    if live_run is not None:
        config = config.model_copy(update={"live": live_run.info})

    given_workers = ctx.get_parameter_source("workers") is click.core.ParameterSource.COMMANDLINE
    config = _place(  # with many in flight: worker processes and the agent's loop, said
        config,
        loaded,
        parallel=parallel,
        executor=executor,
        workers=workers if given_workers else None,
        quiet=quiet,
    )
    executor_options: dict[str, Any] = {"address": ray_address} if ray_address else {}
    if given_workers and executor == "local":
        executor_options["workers"] = workers  # wins over a placement
    runner = Runner(
        config,
        run_dir,
        parallel=parallel,
        executor_name=executor,
        executor_options=executor_options,
        suite=loaded,
    )
    _warn_unisolated(runner.suite, config, Console(stderr=True))  # even with --quiet
    if _names_toolenvs(runner.suite, config.select(runner.suite)):
        from toolproof.envs import check_suite  # pinned tool environments: set up, undrifted

        check_suite(
            runner.suite,
            config.select(runner.suite),
            cache_root=Path(config.env_cache) if config.env_cache else None,
            allow_drift=config.allow_drift,
            warn=lambda text: Console(stderr=True).print(f"[bold yellow]WARNING: {text}[/]"),
        )
    mode = "json" if json_progress else ("none" if quiet else progress_mode)
    summary = _execute(runner, run_dir, resume is not None, mode, live_run)
    _store_overview(run_dir)
    _finish(summary, run_dir, mode=mode, quiet=quiet, max_infra=max_infra)


def _names_toolenvs(suite: Any, task_ids: list[str]) -> bool:
    """Whether the suite or one of the run's tasks pins a tool environment (``toolenv``):
    only then is there anything for ``envs.check_suite`` to check (a run of others does
    not import it)."""
    if suite.config.sandbox is not None and suite.config.sandbox.toolenv:
        return True
    wanted = set(task_ids)
    return any(t.sandbox is not None and t.sandbox.toolenv for t in suite.tasks if t.id in wanted)
