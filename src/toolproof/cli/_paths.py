"""Where the CLI keeps its caches, and its plug-in loading: stdlib only, so a quick
command (``toolproof list``) can use them without importing click."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from ._fast_list import cache_folder


def cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/toolproof`` (default ``~/.cache/toolproof``); none when
    ``TOOLPROOF_NO_INDEX`` is set or no cache folder can be named."""
    folder = cache_folder()
    return None if folder is None else Path(folder)


def suite_index_file() -> Path | None:
    """The suite index (:mod:`toolproof.spec.index`) in :func:`cache_dir`."""
    folder = cache_dir()
    return None if folder is None else folder / "suite-index.json"


def plugins_file() -> Path | None:
    """The plug-in entry-point cache (:mod:`toolproof._plugins`) in :func:`cache_dir`."""
    folder = cache_dir()
    return None if folder is None else folder / "plugins.json"


def load_plugins(warn: Callable[[str], object] | None = None) -> dict[str, str | None]:
    """Load third-party plug-ins unless TOOLPROOF_NO_PLUGINS is set; report broken ones
    through ``warn`` (default: a plain line on stderr). Returns every plug-in found, with
    its error (None: loaded)."""
    from toolproof._plugins import load_plugins

    loaded = load_plugins(enabled=not os.environ.get("TOOLPROOF_NO_PLUGINS"), cache=plugins_file())
    for name, error in loaded.items():
        if error is not None:
            text = f"warning: plug-in {name!r} failed to load: {error}"
            if warn is not None:
                warn(text)
            else:
                sys.stderr.write(text + "\n")
    return loaded
