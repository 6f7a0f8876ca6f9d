"""The ``toolproof`` command line: the only place that reads argv and the environment.

Commands live in their own modules and are imported only when invoked (the click
group in ``_group``), so ``toolproof --help`` stays fast: it is answered without
importing click. To add one, add a line to ``COMMANDS`` (``catalog.py``, below both
this package and ``_group``, which read it).
"""

from __future__ import annotations

import os
import sys

from .catalog import COMMANDS as COMMANDS
from .catalog import HELP as HELP

TYPE_CHECKING = False  # typing's own (importing typing costs a start-up a third more)
if TYPE_CHECKING:
    from typing import Any

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
    if argv is None:  # this process's own command line: the process ends with it
        _pace_collections()
        try:
            return _main(sys.argv[1:], None)
        finally:
            _skip_collection_at_exit()
    return _main(argv, argv)


def _pace_collections() -> None:
    """Collect the oldest generation a tenth as often in the command line's own process.

    A command's start imports its modules and builds pydantic models: objects that live as
    long as the process, which every full collection walks again, one each time the heap
    grew by a quarter: a few percent of a short run's CPU, for nothing collected. The
    young generations are collected as before; the engine paces a run's episodes the same
    way (``engine._collections.RUN_THRESHOLDS``, restored to these after the run).
    """
    import gc

    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


def _skip_collection_at_exit() -> None:
    """Freeze the garbage collector's objects as the process's command ends.

    At exit CPython collects every generation again while it tears the modules down:
    after a run, tens of thousands of objects (pydantic's schemas, the loaded modules)
    walked for nothing, an eighth of a short run's CPU. Frozen objects are not walked; the
    operating system reclaims them. Nothing toolproof writes depends on a collection at
    exit: stores and files are closed by the commands, ``atexit`` hooks (logging,
    ``weakref.finalize``) still run, and Python itself promises no ``__del__`` then.
    Only the process's own entry point (``argv`` None) does this: a caller that passes
    ``argv`` (the tests, in one process) keeps its collector as it was.
    """
    import gc

    gc.freeze()


def _main(args: list[str], argv: list[str] | None) -> Any:
    """:func:`main` for ``args`` (``argv`` as given, for click)."""
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
