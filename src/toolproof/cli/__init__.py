"""The ``toolproof`` command line: the only place that reads argv and the environment.

Commands live in their own modules and are imported only when invoked, so
``toolproof --help`` stays fast. To add one, add a line to ``COMMANDS``.
"""

from __future__ import annotations

import sys
from typing import Any

import click

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("toolproof.cli._run:run", "Run a suite against an agent."),
    "list": ("toolproof.cli._list:list_", "List suites, agents and tools (or a suite's tasks)."),
    "validate": ("toolproof.cli._validate:validate", "Validate suites and task files."),
    "show": ("toolproof.cli._show:show", "Show the summary of a run."),
    "schema": ("toolproof.cli._schema:schema", "Print the JSON Schema of the task format."),
    "serve-mcp": ("toolproof.cli._serve_mcp:serve_mcp", "Serve one task's tools over MCP."),
    "compare": ("toolproof.cli._compare:compare", "Compare two runs: changes and significance."),
    "baseline": ("toolproof.cli._baseline:baseline", "Save a baseline run; check runs against it."),
    "report": ("toolproof.cli._report:report", "Write a self-contained HTML report of a run."),
    "view": ("toolproof.cli._view:view", "Browse runs in a local web viewer."),
    "replay": ("toolproof.cli._replay:replay", "Continue a recorded episode from step N."),
    "snapshot": ("toolproof.cli._replay:snapshot", "Write a recorded episode's state at step N."),
    "env": ("toolproof.cli._env:env", "Set up and check a suite's pinned tool environments."),
    "check-task": ("toolproof.cli._check_task:check_task", "The quality gate of tasks."),
    "new-task": ("toolproof.cli._new_task:new_task", "Scaffold a task file to fill in."),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when it runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        import importlib

        module_name, attr = COMMANDS[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolproof")
def cli() -> None:
    """toolproof: executable, reproducible benchmarks for tool-using agents.

    Quick start: toolproof run core --agent oracle
    """


def main(argv: list[str] | None = None) -> Any:
    """Entry point: run the CLI, turning toolproof errors into messages, not tracebacks.

    Exit status, the same for every command (docs/cli.md): 0 ok; 1 a gate or check
    failed (a regression, problems found); 2 usage or input error; 3 the run is
    incomplete or measured too little; 130 interrupted at once.
    """
    from toolproof.spec.errors import ToolproofError

    from ._common import EXIT_INTERRUPTED, EXIT_USAGE

    try:
        return cli.main(args=argv, prog_name="toolproof", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        # A plain ClickException (exit 1 by click's default) is raised by the commands
        # for bad input (not a run folder, an unreadable file): that is a 2 here.
        sys.exit(EXIT_USAGE if type(exc) is click.ClickException else exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("Interrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except ToolproofError as exc:
        click.secho("error:", fg="red", bold=True, err=True, nl=False)
        text = str(exc)
        click.echo(("\n" if "\n" in text else " ") + text, err=True)
        sys.exit(EXIT_USAGE)
