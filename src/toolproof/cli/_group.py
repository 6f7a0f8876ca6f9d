"""The click group of ``toolproof``: imports a command's module only when it runs."""

from __future__ import annotations

import click

from .catalog import COMMANDS, HELP


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


@click.group(cls=LazyGroup, help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolproof")
def cli() -> None:
    """The ``toolproof`` command (its help is :data:`toolproof.cli.HELP`)."""
