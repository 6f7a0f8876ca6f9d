"""``toolproof show RUN_DIR --failures``: failed episodes grouped by failure mode."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape


def print_failures(run_dir: Path, console: Console | None = None) -> None:
    """Print each failure mode with its episodes: step, failing check and its detail."""
    from toolproof.metrics.failures import failures_by_mode
    from toolproof.results import RunReader

    console = console or Console()
    with RunReader(run_dir) as reader:
        groups = failures_by_mode(reader.records())
        scored = reader.count()
    failed = sum(len(v) for v in groups.values())
    console.print(f"[bold]{failed} failed episodes[/] of {scored} in {run_dir}")
    for mode, entries in groups.items():
        console.print(f"\n[bold red]{mode}[/] ({len(entries)})")
        for e in entries:
            step = "-" if e.step is None else str(e.step)
            check = f"{e.check}: " if e.check else ""
            detail = e.detail if len(e.detail) <= 200 else e.detail[:197] + "..."
            console.print(
                f"  {escape(e.key)}  step {step}  {e.level}/{e.termination}  "
                f"{escape(check + detail)}",
                soft_wrap=True,
            )
