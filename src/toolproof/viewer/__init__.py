"""The web viewer: runs, episodes replayed step by step, and run comparison.

Map::

    toolproof view RUNS_DIR --> _server.serve --> _app.create_app (Starlette)
        pages   _pages.py  (Jinja shells, templates/)  + static/*.js, *.css (no build step)
        API     _api.py --> _catalog (run dirs) --> _overview (overview.json, or
                                                     summary.json + rows)
                        --> _queries (filter/sort/page/search via RunReader, on
                                      run.db's covering and trigram indexes)
                        --> _episode (one record; file diffs from snapshots)
                        --> _compare (two runs' rows)

Reads run directories only (``toolproof.results``); never imports the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolproof._lazy import load_name

if TYPE_CHECKING:
    from ._app import create_app
    from ._server import running_viewer, serve

__all__ = ["create_app", "running_viewer", "serve", "write_overview"]

_HOME_OF = {
    "create_app": "_app",
    "running_viewer": "_server",
    "serve": "_server",
    "write_overview": "_overview",
}


def __getattr__(name: str) -> Any:
    """Load a name on first use: ``toolproof run`` stores a run's overview through
    :func:`write_overview` without importing the web server (Starlette, Jinja)."""
    return load_name(__name__, _HOME_OF, name)
