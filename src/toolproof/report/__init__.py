"""Reports read from a run directory: the console summary and the static HTML report.

Map::

    console.py   headline / print_summary  (rich, for the terminal)
    html.py      render_report / write_report -> _data.py (RunReader, summary.json,
                 metrics.compare) -> _charts.py (plotly specs) -> templates/ (Jinja)

Reads what the engine wrote (``toolproof.results``); never imports the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolproof._lazy import load_name

if TYPE_CHECKING:
    from .console import headline, print_summary
    from .html import MissingExtraError, render_report, write_report

_HOME_OF = {
    "headline": "console",
    "print_summary": "console",
    "MissingExtraError": "html",
    "render_report": "html",
    "write_report": "html",
}


def __getattr__(name: str) -> Any:
    """Load a name on first use: a run prints the console summary without the HTML
    report's Jinja templates (jinja2 alone is a tenth of a one-task run's start-up)."""
    return load_name(__name__, _HOME_OF, name)


__all__ = ["MissingExtraError", "headline", "print_summary", "render_report", "write_report"]
