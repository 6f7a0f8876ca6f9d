"""``toolproof export``: a run in Inspect AI, OpenTelemetry, CSV, Parquet or JUnit form."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

FORMAT_NAMES = ("inspect", "otel", "csv", "parquet", "junit")
"""Kept here so that ``--help`` imports no exporter (``toolproof.export.FORMATS`` has them)."""


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "-f",
    "--format",
    "fmt",
    required=True,
    type=click.Choice(FORMAT_NAMES),
    help=(
        "inspect: Inspect AI eval log (inspect view, read_eval_log); otel: OpenTelemetry "
        "OTLP JSON lines, GenAI conventions; csv / parquet: one row per episode; junit: "
        "JUnit XML, one test case per episode."
    ),
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, allow_dash=True),
    help=(
        "The file (or an existing folder) to write; '-': standard output. Default: in the "
        "current folder, named after the run (inspect: Inspect's own log file name, so "
        "`inspect log list` and `inspect view` find it)."
    ),
)
def export(run_dir: Path, fmt: str, output: Path | None) -> None:
    """Export the run in RUN_DIR to another tool's format.

    Every format streams the run's episodes, so a run of any size exports in
    bounded memory. Examples:

    \b
      toolproof export runs/core-openai-1 --format inspect -o logs/
      toolproof export runs/core-openai-1 --format csv -o results.csv
      toolproof export runs/core-openai-1 --format junit -o junit.xml
    """
    from toolproof.export import default_name, export_run

    if output is not None and str(output) == "-":
        count, damaged = export_run(run_dir, fmt, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        _tell(count, damaged, None)
        return
    target = output if output is not None else Path(default_name(run_dir, fmt))
    if target.is_dir():
        target = target / default_name(run_dir, fmt)
    tmp = target.with_name(target.name + ".tmp")
    try:
        with tmp.open("wb") as fh:
            count, damaged = export_run(run_dir, fmt, fh)
        tmp.replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise click.ClickException(
            f"{target}: cannot write the export ({exc.strerror or exc}); give -o a file in a "
            "folder you can write to"
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _tell(count, damaged, target)


def _tell(count: int, damaged: list[str], target: Path | None) -> None:
    where = f" to {target}" if target is not None else ""
    click.echo(f"wrote {count} episode(s){where}", err=target is None)
    if damaged:
        shown = ", ".join(damaged[:5]) + (" ..." if len(damaged) > 5 else "")
        click.secho(
            f"warning: {len(damaged)} episode(s) left out: their trajectory cannot be read "
            f"back ({shown}); `toolproof run --resume` runs them again",
            fg="yellow",
            err=True,
        )
