"""``toolproof show RUN_DIR --failures``: why episodes failed, grouped by failure mode.

Each episode shows its recorded agent or infra error first (what the agent or
the harness said went wrong), then its failing checks. Infra-error episodes are
not scored and are listed in their own group, after a banner.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from toolproof.metrics.failures import FailedEpisode


def _entry(console: Console, e: FailedEpisode) -> None:
    step = "-" if e.step is None else str(e.step)
    tries = f", {e.attempts} attempts" if e.attempts > 1 else ""
    console.print(
        f"  {escape(e.key)}  step {step}  {e.level}/{e.termination}{tries}", soft_wrap=True
    )
    if e.error:
        console.print(f"    [bold]error:[/] {escape(e.error)}", soft_wrap=True)
    for message in e.checks[:3]:
        console.print(f"    check {escape(message)}", soft_wrap=True)
    if len(e.checks) > 3:
        console.print(f"    [dim]... and {len(e.checks) - 3} more failing checks[/]")


def print_failures(run_dir: Path, console: Console | None = None) -> None:
    """Print the infra-error banner, then each failure mode with its episodes."""
    from toolproof.metrics.failures import INFRA_ERROR, failure_report
    from toolproof.results import RunReader

    console = console or Console()
    with RunReader(run_dir) as reader:
        report = failure_report(reader.records())
    banner = report.banner()
    if banner:
        console.print(f"[bold yellow]{escape(banner)}[/]", soft_wrap=True)
    infra = f", {len(report.infra)} infrastructure errors" if report.infra else ""
    where = escape(str(run_dir))
    if report.episodes and not report.scored:
        console.print(
            f"[bold]no episode was scored[/]: all {report.episodes} were infrastructure "
            f"errors, in {where}",
            soft_wrap=True,
        )
    else:
        console.print(
            f"[bold]{report.failed} failed episodes[/] of {report.scored} scored "
            f"({report.episodes} episodes{infra}) in {where}",
            soft_wrap=True,
        )
    for mode, entries in report.groups.items():
        console.print(f"\n[bold red]{escape(mode)}[/] ({len(entries)})")
        for e in entries:
            _entry(console, e)
    if report.infra:
        console.print(
            f"\n[bold yellow]{INFRA_ERROR}[/] ({len(report.infra)}, not scored: "
            "the harness or the agent's endpoint failed, not the agent's answer)"
        )
        for e in report.infra:
            _entry(console, e)
