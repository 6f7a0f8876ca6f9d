"""The backend registry: ``@sandbox("name")`` next to each implementation."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TypeVar

from toolproof.sandbox._base import Sandbox
from toolproof.sandbox._errors import SandboxError

__all__ = [
    "CONTAINER",
    "CONTAINER_ENGINES",
    "available_backends",
    "container_backend",
    "default_backend",
    "get_backend",
    "sandbox",
]

_log = logging.getLogger(__name__)
_REGISTRY: dict[str, type[Sandbox]] = {}
_S = TypeVar("_S", bound=type[Sandbox])
#: The name that asks for whichever container engine runs here (see ``container_backend``).
CONTAINER = "container"
#: The container engines ``container`` tries, in order: docker is chosen when named, or
#: when it is the only one that works.
CONTAINER_ENGINES = ("podman", "docker")


def sandbox(name: str) -> Callable[[_S], _S]:
    """Register a ``Sandbox`` subclass under ``name`` and set its ``name``.

    Raises:
        SandboxError: ``name`` is empty, already taken, or the class is no Sandbox.
    """
    if not isinstance(name, str) or not name.strip():
        raise SandboxError(f"a sandbox backend name must be a non-empty string, got {name!r}")

    def register(cls: _S) -> _S:
        if not (isinstance(cls, type) and issubclass(cls, Sandbox)):
            raise SandboxError(f"@sandbox({name!r}) must decorate a Sandbox subclass, got {cls!r}")
        existing = _REGISTRY.get(name)
        if existing is not None:
            raise SandboxError(
                f"sandbox backend {name!r} is already registered by "
                f"{existing.__module__}.{existing.__qualname__}; choose another name"
            )
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return register


def get_backend(name: str) -> type[Sandbox]:
    """The backend class registered as ``name``.

    ``"container"`` is the first of :data:`CONTAINER_ENGINES` that can run here.

    Raises:
        SandboxError: No backend has that name (the message lists the valid ones), or
            it is ``container`` and no container engine works here.
    """
    if name == CONTAINER:
        return container_backend()
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRY)) or "(none registered)"
        raise SandboxError(f"unknown sandbox backend {name!r}; valid names: {valid}") from None


def container_backend() -> type[Sandbox]:
    """The first container engine of :data:`CONTAINER_ENGINES` that can run here.

    Raises:
        SandboxError: None can; the message gives each one's reason.
    """
    reasons = []
    for engine in CONTAINER_ENGINES:
        cls = _REGISTRY.get(engine)
        if cls is None:
            continue
        reason = cls.unavailable_reason()
        if reason is None:
            return cls
        reasons.append(f"{engine}: {reason}")
    raise SandboxError(
        f"sandbox backend {CONTAINER!r} needs a container engine, and none works here ("
        + "; ".join(reasons)
        + "); install podman, or start a Docker daemon (docs/isolation.md)"
    )


def available_backends() -> list[str]:
    """Names of the registered backends that can run on this host, sorted."""
    return [name for name, cls in sorted(_REGISTRY.items()) if cls.available()]


def default_backend(*, commands_on_host: bool = False) -> str:
    """``"bwrap"`` when bubblewrap works here; otherwise an error, never a silent fallback.

    Isolation is the run's decision (invariant 9): commands run on the host without
    isolation only when the person running toolproof said so, with
    ``--run-commands-on-host`` (``commands_on_host``); then, where bwrap cannot run,
    this is ``"process"`` with a loud warning (a ``RuntimeWarning`` and a log record).

    Raises:
        SandboxError: bwrap cannot run here and ``commands_on_host`` is False; the
            message names the real cause and both ways out.
    """
    bwrap = _REGISTRY.get("bwrap")
    reason = bwrap.unavailable_reason() if bwrap is not None else "no 'bwrap' backend registered"
    if reason is None:
        return "bwrap"
    if not commands_on_host:
        raise SandboxError(
            f"commands cannot run isolated here: bubblewrap cannot be used ({reason}). Fix "
            "that, choose another isolated backend (--sandbox podman, docker or container, "
            "with an image), or, to run commands on this host as this user without isolation, pass "
            "--run-commands-on-host"
        )
    message = (
        f"bubblewrap cannot be used ({reason}); as --run-commands-on-host allows, commands "
        "run with the 'process' sandbox backend: NOT isolated, on this host as this user, "
        "with network access and sight of every file this user can read. Install "
        "bubblewrap (e.g. apt-get install bubblewrap) before running untrusted agents."
    )
    _log.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)
    return "process"
