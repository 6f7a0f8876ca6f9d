"""What ``toolproof run`` checks and says before a run starts.

The checks of its options that need more than click (an attack name against the suite,
a share, a run folder that must be new) and the warnings it prints about the selected
tasks (commands that would run without isolation, a model-played user without a model).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from toolproof.engine import RunConfig
    from toolproof.spec import Suite


def _with_attack(suite: str, attack: str) -> str:
    """The suite name with the attack as its variant (``agentdojo:banking@NAME``).

    Raises:
        click.BadParameter: the name is malformed or the suite takes no attack.
    """
    import re

    from toolproof.spec import SpecError
    from toolproof.spec.providers import is_provided, with_variant

    if not re.fullmatch(r"[a-z0-9_]+", attack):
        raise click.BadParameter(
            f"{attack!r} is not an attack name (lower-case letters, digits and _, "
            "e.g. important_instructions)",
            param_hint="--attack",
        )
    if not is_provided(suite):
        raise click.BadParameter(
            f"suite {suite!r} has no attacks to place; --attack is for suites built from a "
            "package that has them (agentdojo, agentdojo:banking, ...)",
            param_hint="--attack",
        )
    try:
        return with_variant(suite, attack)
    except SpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--attack") from None


def _attack_of(suite: str) -> str | None:
    """The attack a provided suite's name carries (``@NAME``), else None."""
    from toolproof.spec.providers import is_provided, split_variant

    parts = split_variant(suite) if is_provided(suite) else None
    return parts[2] if parts is not None else None


def _share(value: float) -> float:
    """A share in [0, 1]; NaN (which every range test lets through) is refused."""
    if value != value:
        raise click.BadParameter(f"{value!r} is not a number between 0 and 1")
    return value


def _refuse_used(run_dir: Path) -> None:
    """A new run goes into a new (or empty) folder: never continue a run by accident.

    Raises:
        click.UsageError: The folder holds files already.
    """
    import shlex

    from toolproof.results import LOCK_NAME

    if run_dir.exists() and not run_dir.is_dir():
        raise click.UsageError(f"-o {run_dir}: it is a file; give a folder for the run")
    held = (
        sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_NAME) if run_dir.is_dir() else []
    )
    if held:
        shown = ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")
        raise click.UsageError(
            f"{run_dir} is not empty ({shown}); to finish the run there, pass "
            f"`--resume {shlex.quote(str(run_dir))}`; to start a new one, pass another -o folder"
        )


def _say_user_fallback(suite: Suite, config: RunConfig, *, quiet: bool) -> None:
    """Say once that the scripted user plays ``simulator: model`` tasks without --user-model."""
    if config.user_model is not None or quiet:
        return
    chosen = set(config.select(suite))
    played = [
        t.id
        for t in suite.tasks
        if t.id in chosen and t.user is not None and t.user.simulator == "model"
    ]
    if played:
        click.echo(
            f"note: {len(played)} task(s) have `user.simulator: model` (e.g. {played[0]}) but "
            "no --user-model was given: the scripted user plays them",
            err=True,
        )


def _host_backend(
    suite: Suite, patterns: Sequence[str] = (), *, commands_on_host: bool = False
) -> str | None:
    """``default_backend()`` for a run whose tasks (those matching ``patterns``; all when
    empty) run commands, None for one whose tasks do not; without its RuntimeWarning:
    ``_warn_unisolated`` says it louder. Only the selected tasks count, so the answer is
    the same whether the suite was loaded whole or only those tasks.

    Raises:
        click.UsageError: bwrap cannot run here and ``--run-commands-on-host`` was not
            given: the run refuses (it never falls back to the host on its own).
    """
    import fnmatch
    import warnings

    from toolproof.sandbox import SandboxError, default_backend
    from toolproof.tools import resolve_tools
    from toolproof.tools.base import offers_commands  # not the shell toolkit's: unloaded

    chosen = [
        t for t in suite.tasks if not patterns or any(fnmatch.fnmatch(t.id, p) for p in patterns)
    ]
    if not any(offers_commands(resolve_tools(task)) for task in chosen):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return default_backend(commands_on_host=commands_on_host)
        except SandboxError as exc:
            raise click.UsageError(f"nothing was run: {exc}") from None


def _refuse_unisolated(fields: dict[str, object], *, commands_on_host: bool) -> None:
    """Refuse a run that would run commands unisolated without ``--run-commands-on-host``.

    Isolation is the run's decision (invariant 9), and the person running toolproof
    makes it on the command line: ``--sandbox process`` (also one a resumed run kept)
    or a ``cmd:`` agent's ``--agent-arg sandbox=process`` needs the option too.

    Raises:
        click.BadParameter: naming the option and both fixes.
    """
    from toolproof.spec.sandbox import HOST_OPTION, UNISOLATED_BACKENDS

    if commands_on_host:
        return
    options = fields.get("agent_options")
    chosen = options.get("sandbox") if isinstance(options, dict) else None
    for value, hint in ((fields.get("sandbox"), "--sandbox"), (chosen, "--agent-arg sandbox")):
        if value in UNISOLATED_BACKENDS:
            raise click.BadParameter(
                f"{value!r} runs commands on this host as this user, NOT isolated; pass "
                f"{HOST_OPTION} too if that is what you mean, or use an isolated backend "
                "(bwrap, the default)",
                param_hint=hint,
            )


def _warn_unisolated(suite: Suite, config: RunConfig, console: Console) -> None:
    """Print a loud warning when tasks of this run would run commands without isolation.

    Raises:
        click.BadParameter: A backend name is not registered.
    """
    from toolproof.sandbox import SandboxError, get_backend
    from toolproof.spec import effective_sandbox
    from toolproof.tools import resolve_tools
    from toolproof.tools.base import offers_commands

    exposed: dict[str, list[str]] = {}
    selected = set(config.select(suite))
    for task in suite.tasks:
        if task.id not in selected or not offers_commands(resolve_tools(task)):
            continue
        from toolproof.tools.toolkits.shell import backend_name  # a task runs commands

        settings = effective_sandbox(
            config.sandbox,
            suite.config.sandbox,
            task.sandbox,
            commands_on_host=config.run_commands_on_host,
        )
        try:
            backend = get_backend(backend_name(settings))
        except SandboxError as exc:
            raise click.BadParameter(str(exc), param_hint="--sandbox / sandbox.backend") from None
        if not backend.isolated:
            exposed.setdefault(backend.name, []).append(task.id)
    for name, tasks in exposed.items():
        bwrap = get_backend("bwrap").unavailable_reason()
        why = f" (bubblewrap cannot be used here: {bwrap})" if bwrap else ""
        console.print(
            f"[bold red]WARNING: {len(tasks)} task(s) run commands with the {name!r} sandbox "
            f"backend{why}: commands are NOT isolated; they run on this host as this user, "
            "with its files and network. Use --sandbox bwrap (apt-get install bubblewrap) "
            "for untrusted agents.[/]"
        )
