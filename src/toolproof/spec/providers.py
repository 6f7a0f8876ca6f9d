"""Suites built at load time from installed packages (BFCL, AgentDojo), found by name.

A name ``PREFIX`` or ``PREFIX:PART`` whose prefix is registered here is not a
directory: its builder, given by ``module:attr`` and imported only when the name
is used, returns a :class:`Suite` built in memory. A provider with a ``variant``
keyword also takes ``PREFIX[:PART]@VARIANT`` (AgentDojo's attack:
``agentdojo:banking@important_instructions``, what ``run --attack`` writes).
Nothing is imported at import time, so the base install never touches the
upstream packages.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import Problem, SpecError

if TYPE_CHECKING:  # only named in annotations: the models load when a suite is built
    from .suite import Suite

SuiteBuilder = Callable[..., "Suite"]
"""``builder(part_or_None, *, allow_drift=bool[, VARIANT=str_or_None]) -> Suite``."""


@dataclass(frozen=True)
class SuiteProvider:
    """Where a family of package-built suites comes from."""

    builder: str
    """``module:attr`` of the builder."""
    distribution: str
    """The PyPI distribution that holds the data and checkers."""
    install: str
    """The command that installs it."""
    variant: str | None = None
    """The builder's keyword that ``@VALUE`` fills (None: the provider takes none)."""


PROVIDERS: dict[str, SuiteProvider] = {
    "bfcl": SuiteProvider(
        "toolproof.upstream.bfcl:build_suite",
        "bfcl-eval",
        "pip install --no-deps 'bfcl-eval==2026.3.23' filelock mpmath==1.3.0",
    ),
    "agentdojo": SuiteProvider(
        "toolproof.upstream.agentdojo:build_suite",
        "agentdojo",
        "pip install 'toolproof[openai,anthropic]' requests tenacity && "
        "pip install --no-deps 'agentdojo==0.1.35' 'deepdiff==8.6.1' orderly-set "
        "email-validator dnspython",
        variant="attack",
    ),
}
_NAME = re.compile(
    r"^(?P<prefix>[a-z][a-z0-9_]*)(?::(?P<part>[a-z0-9_]+))?(?:@(?P<variant>[a-z0-9_]+))?$"
)


def split_name(name: str) -> tuple[str, str | None] | None:
    """``(prefix, part)`` when ``name`` names a provided suite, else None."""
    parts = split_variant(name)
    return None if parts is None else (parts[0], parts[1])


def split_variant(name: str) -> tuple[str, str | None, str | None] | None:
    """``(prefix, part, variant)`` when ``name`` names a provided suite, else None."""
    match = _NAME.match(name)
    if match is None or match["prefix"] not in PROVIDERS:
        return None
    return match["prefix"], match["part"], match["variant"]


def with_variant(name: str, variant: str) -> str:
    """``name`` with ``@variant`` set (``agentdojo:banking`` -> ``agentdojo:banking@X``).

    Raises:
        SpecError: ``name`` is not a provided suite whose provider takes a variant.
    """
    parts = split_variant(name)
    provider = PROVIDERS[parts[0]] if parts is not None else None
    if parts is None or provider is None or provider.variant is None:
        takers = ", ".join(p for p, v in PROVIDERS.items() if v.variant) or "none"
        raise SpecError(
            [Problem(None, None, "suite", f"{name!r} takes no @variant (suites that do: {takers})")]
        )
    base = parts[0] + (f":{parts[1]}" if parts[1] else "")
    return f"{base}@{variant}"


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
    parts = split_variant(name)
    if parts is None:
        return None
    prefix, part, variant = parts
    provider = PROVIDERS[prefix]
    if variant is not None and provider.variant is None:
        message = f"suite {name!r}: {prefix} takes no @variant; drop '@{variant}'"
        raise SpecError([Problem(None, None, "suite", message)])
    module_name, _, attr = provider.builder.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        message = f"suite {name!r} needs {provider.distribution}: {provider.install} ({exc})"
        raise SpecError([Problem(None, None, "suite", message)]) from None
    builder: SuiteBuilder = getattr(module, attr)
    options = {} if provider.variant is None else {provider.variant: variant}
    try:
        return builder(part, allow_drift=allow_drift, **options)
    except ModuleNotFoundError as exc:  # the package imports a module that is not installed
        message = (
            f"suite {name!r}: {provider.distribution} needs the module {exc.name!r}, which is "
            f"not installed; the whole install: {provider.install}"
        )
        raise SpecError([Problem(None, None, "suite", message)]) from None
