"""Reports read from a run directory: the console summary and the static HTML report.

Map::

    console.py   headline / print_summary  (rich, for the terminal)
    html.py      render_report / write_report -> _data.py (RunReader, summary.json,
                 metrics.compare) -> _charts.py (plotly specs) -> templates/ (Jinja)

Reads what the engine wrote (``toolproof.results``); never imports the engine.
"""

from .console import headline, print_summary
from .html import MissingExtraError, render_report, write_report

__all__ = ["MissingExtraError", "headline", "print_summary", "render_report", "write_report"]
