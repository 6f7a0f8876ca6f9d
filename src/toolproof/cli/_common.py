"""Helpers shared by CLI commands: exit codes, plug-ins, agent options, run directories."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ._paths import load_plugins as _load_plugins
from ._paths import suite_index_file as suite_index_file  # where callers import it

EXIT_OK = 0
"""The command did what was asked and every gate passed."""
EXIT_FAILED = 1
"""A gate or check failed: a regression, problems found by ``validate``, drift."""
EXIT_USAGE = 2
"""Usage or input error: a bad option, suite, task file, agent spec or run directory."""
EXIT_INCOMPLETE = 3
"""The run is incomplete (stopped) or measured too little (no scored episodes, infra errors)."""
EXIT_INTERRUPTED = 130
"""A second Ctrl-C: the process quit at once (finished episodes are still saved)."""


def load_plugins() -> None:
    """Load third-party plug-ins unless TOOLPROOF_NO_PLUGINS is set; report broken ones.

    The commands that call this build pydantic models next: where no ``pydantic``
    plug-in is installed (found in the same look), pydantic is spared its own look
    (:func:`toolproof._plugins.spare_pydantic_scan`), so call it before their first model.
    """
    from toolproof._plugins import spare_pydantic_scan

    _load_plugins(lambda text: click.secho(text, fg="yellow", err=True))
    spare_pydantic_scan()


def parse_agent_args(values: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs; values are parsed as JSON when they can be (numbers, booleans)."""
    options: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} must look like key=value", param_hint="--agent-arg")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def default_run_dir(suite: str, agent: str) -> Path:
    """``runs/<suite>-<agent>-<timestamp>-<6 random hex>``: two runs started in the same
    second get different folders (a run never continues another one by accident)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{suite}-{agent}")[:80]
    return Path("runs") / f"{slug}-{stamp}-{secrets.token_hex(3)}"


def resume_command(run_dir: Path) -> str:
    """The exact command that continues the run in ``run_dir`` (quoted for a POSIX shell)."""
    return f"toolproof run --resume {shlex.quote(str(run_dir))}"


PROVIDER_ENV = {
    "openai": {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"},
    "anthropic": {"base_url": "ANTHROPIC_BASE_URL", "api_key": "ANTHROPIC_API_KEY"},
}
"""Agent options of each provider kind that the CLI fills from the environment."""


def provider_options(agent: str, options: dict[str, Any]) -> dict[str, Any]:
    """Fill a provider agent's endpoint, key and prices from the environment.

    ``--agent-arg`` wins; an API key recorded as ``<redacted>`` (a resumed run)
    is filled again. ``TOOLPROOF_PRICES`` names extra price files (``,``-separated).
    """
    from toolproof.engine.config import REDACTED

    kind = agent.partition(":")[0]
    if kind not in PROVIDER_ENV:
        return options
    filled = dict(options)
    for key, var in PROVIDER_ENV[kind].items():
        value = os.environ.get(var)
        if value and filled.get(key) in (None, REDACTED):
            filled[key] = value
    prices = os.environ.get("TOOLPROOF_PRICES")
    if prices and "prices" not in filled:
        filled["prices"] = prices
    return filled
