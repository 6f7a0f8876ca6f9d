"""The ``toolproof`` command line: the only place that reads argv and the environment.

Commands live in their own modules and are imported only when invoked (the click
group in ``_group``), so ``toolproof --help`` stays fast: it is answered without
importing click. To add one, add a line to ``COMMANDS``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's own (importing typing costs a start-up a third more)
if TYPE_CHECKING:
    from typing import Any

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("toolproof.cli._run:run", "Run a suite against an agent."),
    "list": ("toolproof.cli._list:list_", "List suites, agents and tools (or a suite's tasks)."),
    "validate": ("toolproof.cli._validate:validate", "Validate suites and task files."),
    "show": ("toolproof.cli._show:show", "Show the summary of a run."),
    "schema": ("toolproof.cli._schema:schema", "Print the JSON Schema of the task format."),
    "serve-mcp": ("toolproof.cli._serve_mcp:serve_mcp", "Serve one task's tools over MCP."),
    "compare": ("toolproof.cli._compare:compare", "Compare two runs: changes and significance."),
    "leaderboard": ("toolproof.cli._leaderboard:leaderboard", "Rank N runs of one suite."),
    "baseline": ("toolproof.cli._baseline:baseline", "Save a baseline run; check runs against it."),
    "report": ("toolproof.cli._report:report", "Write a self-contained HTML report of a run."),
    "view": ("toolproof.cli._view:view", "Browse runs in a local web viewer."),
    "replay": ("toolproof.cli._replay:replay", "Continue a recorded episode from step N."),
    "snapshot": ("toolproof.cli._replay:snapshot", "Write a recorded episode's state at step N."),
    "env": ("toolproof.cli._env:env", "Set up and check a suite's pinned tool environments."),
    "check-task": ("toolproof.cli._check_task:check_task", "The quality gate of tasks."),
    "new-task": ("toolproof.cli._new_task:new_task", "Scaffold a task file to fill in."),
    "export": ("toolproof.cli._export:export", "Export a run: Inspect, OTel, CSV, Parquet, JUnit."),
}


HELP = """toolproof: executable, reproducible benchmarks for tool-using agents.

Quick start: toolproof run core --agent oracle
"""
"""The top-level help text (the click group's docstring, and :func:`_quick_help`'s)."""

if TYPE_CHECKING:
    from ._group import LazyGroup as LazyGroup
    from ._group import cli as cli


def __getattr__(name: str) -> Any:
    """``cli`` and ``LazyGroup`` (the click group) load on first use: plain ``--help``
    is answered without importing click at all."""
    if name in ("cli", "LazyGroup"):
        from . import _group

        return getattr(_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _quick_help() -> str | None:
    """``toolproof --help`` exactly as click prints it, without importing click; ``None``
    where click's layout would differ (a narrow terminal, a line that would wrap)."""
    columns = os.environ.get("COLUMNS", "")
    wide = columns.isdigit() and int(columns) >= 80
    if not wide and (columns or sys.stdout.isatty()):
        return None  # a terminal width to respect: click knows how
    name_width = max(map(len, COMMANDS))
    lines = [
        "Usage: toolproof [OPTIONS] COMMAND [ARGS]...",
        "",
        *(f"  {line}".rstrip() for line in HELP.strip().splitlines()),
        "",
        "Options:",
        "  --version   Show the version and exit.",
        "  -h, --help  Show this message and exit.",
        "",
        "Commands:",
        *(f"  {name:<{name_width}}  {COMMANDS[name][1]}" for name in sorted(COMMANDS)),
    ]
    if any(len(line) > 78 for line in lines):  # click would wrap it
        return None
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> Any:
    """Entry point: run the CLI, turning toolproof errors into messages, not tracebacks.

    Exit status, the same for every command (docs/cli.md): 0 ok; 1 a gate or check
    failed (a regression, problems found); 2 usage or input error; 3 the run is
    incomplete or measured too little; 130 interrupted at once.
    """
    args = sys.argv[1:] if argv is None else argv
    if args in (["--help"], ["-h"]):
        text = _quick_help()
        if text is not None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return 0  # what click's own --help returns here
    if args == ["list"]:
        return _quick_list()
    import click

    from ._group import cli

    try:
        return cli.main(args=argv, prog_name="toolproof", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        # A plain ClickException (exit 1 by click's default) is raised by the commands
        # for bad input (not a run folder, an unreadable file): that is a 2 here.
        sys.exit(_EXIT_USAGE if type(exc) is click.ClickException else exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("Interrupted.", err=True)
        sys.exit(_EXIT_INTERRUPTED)
    except Exception as exc:
        if not _is_toolproof_error(exc):
            raise
        _exit_with_error(exc)


def _exit_with_error(exc: Exception) -> None:
    """Print a toolproof error as a message (no traceback) and exit with status 2."""
    import click

    click.secho("error:", fg="red", bold=True, err=True, nl=False)
    text = str(exc)
    click.echo(("\n" if "\n" in text else " ") + text, err=True)
    sys.exit(_EXIT_USAGE)


def _quick_list() -> int:
    """``toolproof list`` (no options) without click: the overview is plain text from
    the caches (``_listing``), so importing click would cost more than the command;
    when nothing it depends on changed, the text printed last time (``_fast_list``)."""
    from . import _fast_list

    fresh = _fast_list.fresh_process()
    text = _fast_list.cached() if fresh else None
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    from ._listing import overview
    from ._paths import load_plugins

    lines: list[str] = []
    try:
        found = load_plugins()
        overview(lines.append)
    except Exception as exc:
        if not _is_toolproof_error(exc):
            raise
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
        _exit_with_error(exc)
    text = "".join(line + "\n" for line in lines)
    sys.stdout.write(text)
    sys.stdout.flush()
    if fresh and not found:  # a plug-in's code runs at every start: its listing is never kept
        _fast_list.store(text)
    return 0


_EXIT_USAGE = 2  # the same values as _common.EXIT_USAGE / EXIT_INTERRUPTED (a test pins them),
_EXIT_INTERRUPTED = 130  # kept here so that starting the CLI imports no command helpers


def _is_toolproof_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``ToolproofError``, without importing the spec package to ask.

    An error of that class can only exist once its module was imported, so an absent
    module means "no"; this keeps ``toolproof --help`` from loading pydantic.
    """
    errors = sys.modules.get("toolproof.spec.errors")
    return errors is not None and isinstance(exc, errors.ToolproofError)
