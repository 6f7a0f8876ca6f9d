"""What ``toolproof run`` does once its run is set up: execute it under its lock, finish.

Split from ``_run.py`` (the command's options and set-up): ``_execute`` runs the episodes
with progress and Ctrl-C handling, ``_finish`` prints the summary and exits with the run
gate's verdict.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._common import resume_command
from ._live import live_egress
from ._model import run_gateway

if TYPE_CHECKING:
    from toolproof.engine import RunConfig, Runner
    from toolproof.live import LiveRun
    from toolproof.spec import Suite


def _place(
    config: RunConfig,
    suite: Suite,
    *,
    parallel: int,
    executor: str,
    workers: int | None,
    quiet: bool,
) -> RunConfig:
    """The run's placement (``engine/_placement.py``): with many episodes in flight and no
    ``--workers``, worker processes chosen by the run, said in one line and recorded in its
    config. A resume keeps what the run recorded; ``workers`` (an explicit ``--workers``)
    wins over a recorded or chosen number of processes. The harness's loop is never the
    run's choice: a ``loop`` an older run recorded is dropped (only ``--agent-arg
    loop=harness`` puts an agent there)."""
    from toolproof.engine import plan
    from toolproof.engine._placement import choose_placement, describe

    placement = config.placement
    if placement is None:
        placement = choose_placement(
            config,
            planned=len(plan(config, suite)),
            parallel=parallel,
            executor=executor,
            workers_given=workers is not None,
        )
    elif workers is not None and placement.workers != 1:  # --workers on a resume wins
        placement = placement.model_copy(update={"workers": 1})
    if placement is not None and placement.loop is not None:
        placement = placement.model_copy(update={"loop": None})
    if placement is not None and placement.workers == 1:
        placement = None
    if placement is not None and not quiet:
        click.echo(describe(placement), err=True)
    return config.model_copy(update={"placement": placement})


LOOP_STOPPED = "Event loop stopped before Future completed."
"""What ``asyncio.run`` raises when code on the harness's loop stopped it: only an agent
run with ``--agent-arg loop=harness`` can, toolproof never does."""


def _stopped_loop(run_dir: Path) -> None:
    """The harness's event loop was stopped under the run (an agent the user put on it with
    ``--agent-arg loop=harness`` called ``loop.stop()``): the run is incomplete, never a
    traceback; the episodes stored stay, and a resume with the agent on its own thread
    runs the rest."""
    click.secho(
        "error: the harness's event loop was stopped while episodes ran (the agent runs on it "
        "with --agent-arg loop=harness, and agent code stopped it); the run is incomplete. "
        f"Resume with the agent on its own thread: {resume_command(run_dir)} "
        "--agent-arg loop=own (and the run's other --agent-arg options)",
        fg="red",
        bold=True,
        err=True,
    )
    raise SystemExit(3)


def _store_overview(run_dir: Path) -> None:
    """Precompute the viewer's run overview (``overview.json``) now that the run finished,
    so ``toolproof view`` shows it at once; a failure here only costs the viewer time."""
    from toolproof.viewer import write_overview

    try:
        write_overview(run_dir)
    except Exception as exc:  # never fail a finished run over a cache
        click.secho(f"warning: could not store the run overview: {exc}", fg="yellow", err=True)


def _execute(
    runner: Runner, run_dir: Path, resuming: bool, mode: str, live_run: LiveRun | None = None
) -> dict[str, Any]:
    """Run under the run directory's lock, with progress and Ctrl-C handling (and, for live
    tasks, the egress proxy running for the length of the episodes)."""
    import shutil

    from toolproof.engine import plan
    from toolproof.results import LOCK_NAME, RunLock, RunReader, RunStore

    from ._interrupt import stop_on_signals
    from ._progress import default_streams, make_reporter

    created = not run_dir.exists()
    lock = RunLock(run_dir).acquire()  # held until the command ends: one writer per folder
    try:
        stored: list[tuple[bool, str]] = []
        if resuming:
            store = RunStore(run_dir)
            try:
                runner.check_resumable(store)
            finally:
                store.close()
            with RunReader(run_dir) as reader:
                stored = [(bool(r["passed"]), str(r["termination"])) for r in reader.rows()]
        total = len(plan(runner.config, runner.suite))
        stdout, stderr = default_streams()
        label = f"{runner.suite.name} / {runner.config.agent}"
        reporter = make_reporter(mode, label, total, stored, stdout=stdout, stderr=stderr)
        runner.on_episode = reporter.episode
        with stop_on_signals(runner.request_stop, resume_command(run_dir)):
            reporter.start()
            try:
                with live_egress(live_run), run_gateway(runner.config):
                    summary: dict[str, Any] = asyncio.run(runner.run())
            except RuntimeError as exc:
                if str(exc) != LOOP_STOPPED:
                    raise
                _stopped_loop(run_dir)
            finally:
                reporter.close()
        return summary
    except BaseException:
        if (
            created
            and run_dir.is_dir()
            and [p.name for p in run_dir.iterdir()] in ([], [LOCK_NAME])
        ):
            shutil.rmtree(run_dir, ignore_errors=True)  # a run that never started leaves nothing
        raise
    finally:
        lock.release()


def _warn_failed_oracle(summary: dict[str, Any]) -> None:
    """The oracle plays each task's reference solution: one that does not pass is a
    broken task, never the agent's failure; say so (stderr) instead of a quiet 'partial'."""
    if summary.get("agent") != "oracle":
        return
    failed = sorted(
        task_id
        for task_id, entry in (summary.get("tasks") or {}).items()
        if int(entry.get("passed", 0)) < int(entry.get("scored", 0))
    )
    if failed:
        shown = ", ".join(failed[:5]) + (" ..." if len(failed) > 5 else "")
        click.secho(
            f"WARNING: the reference solution of {len(failed)} task(s) does not pass its own "
            f"checks ({shown}): the tasks are broken; `toolproof check-task` says why",
            fg="yellow",
            bold=True,
            err=True,
        )


def _finish(
    summary: dict[str, Any], run_dir: Path, *, mode: str, quiet: bool, max_infra: float
) -> None:
    """Print the summary and the gate's verdict; exit with the verdict's status."""
    from ._gate import judge

    verdict = judge(summary, run_dir, max_infra=max_infra)
    human_out = mode != "json"  # in json mode stdout carries only events
    if not quiet:  # the report package (jinja2 for its HTML) only when a table is printed
        from rich.console import Console

        from toolproof.report import print_summary

        print_summary(run_dir, Console(stderr=not human_out))
    click.echo(f"results: {run_dir}", err=not human_out)
    _warn_failed_oracle(summary)
    if verdict.reason is not None:
        click.secho(verdict.reason, fg="red", bold=True, err=True)
    if mode == "json":
        import json

        episodes = summary.get("episodes", {})
        event = {
            "event": "end",
            "run_dir": str(run_dir),
            "complete": bool(episodes.get("complete", True)),
            "episodes": episodes,
            "success": summary.get("success"),
            "tokens": (summary.get("tokens") or {}).get("total"),
            "cost_usd": (summary.get("cost") or {}).get("usd"),
            "stop_reason": episodes.get("stop_reason"),
            "resume": resume_command(run_dir) if verdict.cause == "incomplete" else None,
            **verdict.to_dict(),
        }
        click.echo(json.dumps(event, sort_keys=True))
    if verdict.code:
        raise SystemExit(verdict.code)
