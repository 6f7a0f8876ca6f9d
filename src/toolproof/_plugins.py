"""Third-party plug-ins: one entry-point group, ``toolproof``, loaded lazily and once.

A plug-in's entry point names a module (or callable) that registers tools,
agents or checks with the usual decorators when imported. A broken plug-in is
reported, not fatal. The CLI turns autoload off when ``TOOLPROOF_NO_PLUGINS`` is set.
"""

from __future__ import annotations

from importlib.metadata import entry_points

GROUP = "toolproof"
_loaded: dict[str, str | None] | None = None


def load_plugins(enabled: bool = True) -> dict[str, str | None]:
    """Load every plug-in once; return name to None (loaded) or the error text."""
    global _loaded
    if _loaded is not None:
        return _loaded
    _loaded = {}
    if not enabled:
        return _loaded
    for ep in entry_points(group=GROUP):
        try:
            target = ep.load()
            if callable(target) and not isinstance(target, type):
                target()
            _loaded[ep.name] = None
        except Exception as exc:
            _loaded[ep.name] = f"{type(exc).__name__}: {exc}"
    return _loaded


def reset_plugins() -> None:
    """Forget what was loaded (for tests)."""
    global _loaded
    _loaded = None
