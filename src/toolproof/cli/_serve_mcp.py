"""``toolproof serve-mcp``: one task instance's tools over MCP, for an outside client to drive."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from ._common import load_plugins


@click.command("serve-mcp")
@click.argument("suite")
@click.argument("task_id")
@click.option(
    "--epoch",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Which instance of the task (its parameters are drawn per epoch).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="MCP over this process's stdin/stdout, or streamable HTTP.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP interface (the tools are not authenticated: keep it local).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="HTTP port; 0 picks a free one (the ready line on stderr reports it).",
)
@click.option(
    "--record",
    "record",
    type=click.Path(path_type=Path, file_okay=False),
    help="Run directory to store the scored episode in (one per task instance).",
)
@click.option(
    "--answer-tool",
    is_flag=True,
    help="Also offer submit_answer(answer): the client's final answer; ends the session.",
)
@click.option("--seed", type=int, default=None, help="Override the suite's seed.")
@click.option(
    "--system-prompt",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Custom system prompt file (a separate track in results).",
)
def serve_mcp(
    suite: str,
    task_id: str,
    epoch: int,
    transport: str,
    host: str,
    port: int,
    record: Path | None,
    answer_tool: bool,
    seed: int | None,
    system_prompt: Path | None,
) -> None:
    """Serve the tools of TASK_ID of SUITE over MCP; score the episode when the client is done.

    Every call goes through toolproof's gateway (argument validation, the task's
    faults) and is recorded. Once a client can connect, one JSON line goes to stderr:
    {"event": "ready", "transport": ..., "url": ..., "port": ..., "tools": [...]}
    (url, host and port with --transport http). The session ends when the client disconnects
    (stdio: closes stdin; HTTP: ends its session), calls submit_answer, or on
    Ctrl-C; then the final state is scored like any other episode and, with
    --record, stored in a run directory (toolproof show RUN_DIR).

    \b
    Examples:
      toolproof serve-mcp core hello-file                     # stdio, for a client to spawn
      toolproof serve-mcp core hello-file --transport http --port 8765 --record runs/mine
    """
    from toolproof.engine import EpisodeJob, RunConfig, Runner, Worker
    from toolproof.results import RunStore
    from toolproof.spec import Problem, SpecError, load_suite, resolve_suite_path

    load_plugins()
    loaded = load_suite(str(resolve_suite_path(suite)))
    ids = [task.id for task in loaded.tasks]
    if task_id not in ids:
        raise SpecError(
            [Problem(None, None, "TASK_ID", f"no task {task_id!r}; tasks: {', '.join(ids)}")]
        )
    options: dict[str, Any] = {
        "answer_tool": answer_tool,
        "stop_on_signal": True,
        "ready_line": True,
    }
    if transport == "http":
        options.update(host=host, port=port)
    config = RunConfig(
        suite=str(resolve_suite_path(suite)),
        agent=f"mcp-serve:{transport}",
        agent_options=options,
        epochs=epoch + 1,
        seed=seed,
        tasks=[task_id],
        system_prompt=system_prompt.read_text(encoding="utf-8") if system_prompt else None,
        retries=0,
    )
    runner = Runner(config, record, suite=loaded) if record is not None else None
    store = RunStore(record) if record is not None else None
    try:
        if runner is not None and store is not None:
            runner.check_resumable(store)  # fail before serving, not after
        worker = Worker(config, record, loaded)
        job = EpisodeJob(task_id, epoch)
        instance = worker.instance(job)
        click.echo(f"toolproof: task {job.key}: {instance.task.description.strip()}", err=True)
        result = asyncio.run(worker.run(job))
        if runner is not None and store is not None:
            store.set_meta(runner.meta())  # the run's facts, as `toolproof run` writes them
            store.append(result)
            runner.finalize(store)
    finally:
        if store is not None:
            store.close()
    score, trajectory = result.score, result.trajectory
    verdict = "passed" if score.passed else "failed"
    click.echo(
        f"toolproof: {job.key} {verdict} ({score.level.value}, {trajectory.termination.value}, "
        f"{score.tool_calls} tool calls)" + (f"; stored in {record}" if record is not None else ""),
        err=True,
    )
    if trajectory.error:
        click.echo(f"toolproof: {trajectory.error}", err=True)
