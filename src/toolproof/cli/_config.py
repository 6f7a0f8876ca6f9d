"""``toolproof run --config FILE`` (or ``toolproof run`` with a ``toolproof.yaml`` here):
every cell of an evaluation file's matrix, one run folder per cell, a matrix summary, and
a leaderboard per suite.

The cells run one after the other in this process, through the ``run`` command itself
(the same checks, gate and folders as a hand-typed run), sharing one model-call cache
(``MATRIX/cache``). The matrix is resumable as a whole: running the same command again
skips the cells whose run is complete, resumes those that stopped (Ctrl-C, a budget),
and starts the rest. Options given on the command line override the file's for every
cell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolproof.spec.evalfile import EVAL_FILE, Cell, EvalFile, load_eval_file

MATRIX = "matrix.json"
"""The matrix summary in the evaluation's folder: each cell's run folder, exit status and
headline numbers."""

OVERRIDABLE = (
    "epochs",
    "seed",
    "parallel",
    "limit",
    "sample",
    "max_tokens",
    "max_cost",
    "max_infra",
    "retries",
    "sandbox",
    "run_commands_on_host",
    "progress_mode",
    "quiet",
    "workers",
    "executor",
    "max_model_calls",
    "max_sandboxes",
)
"""``run`` options a command line may give for every cell of the matrix."""


def find_config(config: Path | None) -> Path | None:
    """The evaluation file to run: ``--config``, else ``./toolproof.yaml`` when present."""
    if config is not None:
        return config
    here = Path(EVAL_FILE)
    return here if here.is_file() else None


def _cell_params(
    evaluation: EvalFile, cell: Cell, folder: Path, given: dict[str, Any]
) -> dict[str, Any]:
    """The ``run`` parameters of one cell: the file's, then the command line's."""
    run_dir = folder / cell.label
    params: dict[str, Any] = {
        "epochs": evaluation.epochs,
        "seed": evaluation.seed,
        "parallel": evaluation.parallel,
        "limit": evaluation.budgets.limit,
        "sample": evaluation.budgets.sample,
        "max_tokens": evaluation.budgets.max_tokens,
        "max_cost": evaluation.budgets.max_cost,
        "quiet": True,
    }
    if evaluation.gates.max_infra_errors is not None:
        params["max_infra"] = evaluation.gates.max_infra_errors
    params.update(given)
    if (run_dir / "run.db").is_file():  # the matrix again: finish this cell's run
        params["resume"] = run_dir  # its own config is kept; only budgets may be raised
        return params
    params.update(
        suite=cell.suite.suite,
        agent=cell.agent,
        model=cell.model,
        agent_args=tuple(f"{k}={json.dumps(v)}" for k, v in cell.agent_entry.args.items()),
        tasks=tuple(cell.suite.tasks),
        out=run_dir,
        cache=folder / "cache",
    )
    return params


def _complete(run_dir: Path) -> bool:
    summary = run_dir / "summary.json"
    if not summary.is_file():
        return False
    episodes = json.loads(summary.read_text(encoding="utf-8")).get("episodes", {})
    return bool(episodes.get("complete", False))


def run_matrix(ctx: click.Context, path: Path, given: dict[str, Any]) -> None:
    """Run every cell of the evaluation file at ``path``; print the boards; exit with the
    worst cell's status (1 when a gate of the file failed).

    ``ctx`` is the ``run`` command's own context (its callback calls this): each cell
    invokes ``ctx.command``, so this module needs no import of ``_run``, which imports it.
    """
    from toolproof.metrics.leaderboard import LeaderboardMismatch, leaderboard
    from toolproof.report.leaderboard import print_leaderboard

    run_command = ctx.command

    evaluation = load_eval_file(path)
    folder = Path(evaluation.out or Path("runs") / f"eval-{evaluation.name}")
    folder.mkdir(parents=True, exist_ok=True)
    cells = evaluation.cells()
    click.echo(f"evaluation {evaluation.name}: {len(cells)} cell(s) into {folder}", err=True)
    results: list[dict[str, Any]] = []
    for number, cell in enumerate(cells, 1):
        run_dir = folder / cell.label
        entry: dict[str, Any] = {
            "cell": cell.label,
            "suite": cell.suite.suite,
            "agent": cell.agent,
            "model": cell.model or cell.model_name,
            "run": str(run_dir),
        }
        if _complete(run_dir):
            click.echo(f"[{number}/{len(cells)}] {cell.label}: complete, skipped", err=True)
            entry["exit_code"] = 0
        else:
            click.echo(f"[{number}/{len(cells)}] {cell.label}", err=True)
            try:
                ctx.invoke(run_command, **_cell_params(evaluation, cell, folder, given))
                entry["exit_code"] = 0
            except SystemExit as exc:
                entry["exit_code"] = exc.code if isinstance(exc.code, int) else 1
            except click.ClickException as exc:
                entry["exit_code"] = exc.exit_code if exc.exit_code != 1 else 2
                entry["error"] = exc.format_message()
                click.secho(f"  {cell.label}: {exc.format_message()}", fg="red", err=True)
        entry.update(_headline(run_dir))
        results.append(entry)
    failed_gates = _gates(evaluation, results)
    (folder / MATRIX).write_text(
        json.dumps(
            {"name": evaluation.name, "file": str(path), "cells": results, "gates": failed_gates},
            indent=2,
            sort_keys=True,
        ),
        encoding="utf-8",
    )
    by_suite: dict[str, list[Path]] = {}
    for entry in results:
        if (Path(entry["run"]) / "run.db").is_file():
            by_suite.setdefault(entry["suite"], []).append(Path(entry["run"]))
    for suite, runs in by_suite.items():
        try:
            print_leaderboard(leaderboard(runs))
        except LeaderboardMismatch as exc:
            click.secho(f"{suite}: {exc}", fg="yellow", err=True)
    click.echo(f"matrix: {folder / MATRIX}", err=True)
    for line in failed_gates:
        click.secho(line, fg="red", bold=True, err=True)
    worst = max((int(e.get("exit_code") or 0) for e in results), default=0)
    if worst:
        raise SystemExit(worst)
    if failed_gates:
        raise SystemExit(1)


def _headline(run_dir: Path) -> dict[str, Any]:
    summary = run_dir / "summary.json"
    if not summary.is_file():
        return {}
    data = json.loads(summary.read_text(encoding="utf-8"))
    success = data.get("success") or {}
    return {
        "success": success.get("rate") if success.get("n") else None,
        "complete": bool((data.get("episodes") or {}).get("complete", False)),
        "tokens": (data.get("tokens") or {}).get("total"),
        "cost_usd": (data.get("cost") or {}).get("usd"),
    }


def _gates(evaluation: EvalFile, results: list[dict[str, Any]]) -> list[str]:
    """Each cell below the file's ``gates.min_success``, as a sentence."""
    floor = evaluation.gates.min_success
    if floor is None:
        return []
    return [
        f"gate: {e['cell']} success {e.get('success')} is below gates.min_success {floor}"
        for e in results
        if e.get("success") is None or float(e["success"]) < floor
    ]
