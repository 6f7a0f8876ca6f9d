"""``toolproof replay`` and ``toolproof snapshot``: time travel over recorded episodes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from ._common import default_run_dir, load_plugins, parse_agent_args

_RUN = click.Path(path_type=Path, exists=True, file_okay=False)


@click.command()
@click.argument("run_dir", type=_RUN)
@click.argument("task_id")
@click.option(
    "--step",
    "-s",
    type=click.IntRange(min=0),
    required=True,
    help="Continue after this many steps (0 = from the start).",
)
@click.option("--agent", "-a", required=True, help="Agent that continues the episode.")
@click.option("--agent-arg", "agent_args", multiple=True, help="Agent option key=value.")
@click.option("--epoch", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--out", "-o", type=click.Path(path_type=Path), help="Run directory for the new episode."
)
def replay(
    run_dir: Path,
    task_id: str,
    step: int,
    agent: str,
    agent_args: tuple[str, ...],
    epoch: int,
    out: Path | None,
) -> None:
    """Restore TASK_ID's world in RUN_DIR at --step and continue it with --agent.

    The result is a new run directory holding one episode linked to the original
    (its trajectory's ``parent`` is ``TASK_ID#EPOCH@STEP``).
    """
    from toolproof.engine import replay_step
    from toolproof.report import print_summary

    load_plugins()
    target = out or default_run_dir(f"replay-{task_id}-s{step}", agent)
    try:
        record = asyncio.run(
            replay_step(
                run_dir,
                task_id,
                step,
                agent,
                target,
                epoch=epoch,
                agent_options=parse_agent_args(agent_args),
            )
        )
    except FileNotFoundError as exc:  # not a run folder, or no such episode: input errors
        raise click.ClickException(str(exc)) from None
    print_summary(target)
    click.echo(f"replayed {record.key} from step {step}: level {record.score.level.value}")
    click.echo(f"results: {target}")


@click.command()
@click.argument("run_dir", type=_RUN)
@click.argument("task_id")
@click.option(
    "--step",
    "-s",
    type=click.IntRange(min=0),
    required=True,
    help="The state after this many steps (0 = initial).",
)
@click.option(
    "--to", "to", type=click.Path(path_type=Path), required=True, help="Output directory."
)
@click.option("--epoch", type=click.IntRange(min=0), default=0, show_default=True)
def snapshot(run_dir: Path, task_id: str, step: int, to: Path, epoch: int) -> None:
    """Write TASK_ID's world at --step to --to (workspace/ and records.json)."""
    from toolproof.engine import export_step

    try:
        export_step(run_dir, task_id, step, to, epoch)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote the state of {task_id}#{epoch} after step {step} to {to}")
