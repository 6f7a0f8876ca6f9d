"""The web viewer: runs, episodes replayed step by step, and run comparison.

Map::

    toolproof view RUNS_DIR --> _server.serve --> _app.create_app (Starlette)
        pages   _pages.py  (Jinja shells, templates/)  + static/*.js, *.css (no build step)
        API     _api.py --> _catalog (run dirs) --> _overview (summary.json + rows)
                        --> _queries (filter/sort/page via RunReader.rows)
                        --> _episode (one record; file diffs from snapshots)
                        --> _compare (two runs' rows)

Reads run directories only (``toolproof.results``); never imports the engine.
"""

from ._app import create_app
from ._server import running_viewer, serve

__all__ = ["create_app", "running_viewer", "serve"]
