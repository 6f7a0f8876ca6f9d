"""Suites built at load time from installed packages (BFCL, AgentDojo), found by name.

A name ``PREFIX`` or ``PREFIX:PART`` whose prefix is registered here is not a
directory: its builder, given by ``module:attr`` and imported only when the name
is used, returns a :class:`Suite` built in memory. Nothing is imported at import
time, so the base install never touches the upstream packages.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import Problem, SpecError
from .suite import Suite

SuiteBuilder = Callable[..., Suite]
"""``builder(part_or_None, *, allow_drift=bool) -> Suite``."""


@dataclass(frozen=True)
class SuiteProvider:
    """Where a family of package-built suites comes from."""

    builder: str
    """``module:attr`` of the builder."""
    distribution: str
    """The PyPI distribution that holds the data and checkers."""
    install: str
    """The command that installs it."""


PROVIDERS: dict[str, SuiteProvider] = {
    "bfcl": SuiteProvider(
        "toolproof.upstream.bfcl:build_suite",
        "bfcl-eval",
        "pip install --no-deps 'bfcl-eval==2026.3.23' filelock mpmath==1.3.0",
    ),
}
_NAME = re.compile(r"^(?P<prefix>[a-z][a-z0-9_]*)(?::(?P<part>[a-z0-9_]+))?$")


def split_name(name: str) -> tuple[str, str | None] | None:
    """``(prefix, part)`` when ``name`` names a provided suite, else None."""
    match = _NAME.match(name)
    if match is None or match["prefix"] not in PROVIDERS:
        return None
    return match["prefix"], match["part"]


def is_provided(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` names a provided suite: a provider claims the name and no
    file or folder of that name exists (a folder of the same name wins)."""
    return (
        isinstance(name_or_path, str)
        and split_name(name_or_path) is not None
        and not Path(name_or_path).exists()
    )


def provided_suite(name: str, *, allow_drift: bool = False) -> Suite | None:
    """Build the suite ``name`` names, or None when no provider claims the name.

    Raises:
        SpecError: the provider's package is missing, drifted, or the part is unknown.
    """
    parts = split_name(name)
    if parts is None:
        return None
    prefix, part = parts
    provider = PROVIDERS[prefix]
    module_name, _, attr = provider.builder.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        message = f"suite {name!r} needs {provider.distribution}: {provider.install} ({exc})"
        raise SpecError([Problem(None, None, "suite", message)]) from None
    builder: SuiteBuilder = getattr(module, attr)
    return builder(part, allow_drift=allow_drift)
