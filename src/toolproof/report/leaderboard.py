"""The leaderboard of N runs on the console and as one self-contained HTML file.

Both render :class:`toolproof.metrics.leaderboard.Leaderboard`; the viewer's page renders
the same ranking from the same function, so the three never disagree. Run values (agent
and model names, paths) are untrusted text: rich markup is escaped and the HTML goes
through Jinja's autoescaping.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, select_autoescape
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolproof.metrics._board_text import COLUMNS, cells, context, pair_lines
from toolproof.metrics.leaderboard import Leaderboard

__all__ = [
    "COLUMNS",
    "cells",
    "context",
    "pair_lines",
    "print_leaderboard",
    "render_leaderboard_html",
    "write_leaderboard_html",
]


def print_leaderboard(board: Leaderboard, console: Console | None = None) -> None:
    """Print the board: the suite, the ranked table, and the adjacent pairwise tests."""
    console = console or Console()
    suite = board.suite
    console.print(
        f"[bold]leaderboard[/] of {len(board.standings)} run(s) on "
        f"[bold]{escape(str(suite.get('suite')))}[/] {escape(str(suite.get('version')))} "
        f"(track {escape(str(suite.get('track')))})"
    )
    table = Table(show_header=True, header_style="bold", box=None)
    for _, title in COLUMNS:
        table.add_column(title)
    for row in board.standings:
        text = cells(row)
        table.add_row(*(escape(text[key]) for key, _ in COLUMNS))
    console.print(table)
    for line in pair_lines(board):
        console.print(escape(line), soft_wrap=True)
    console.print(
        "[dim]ranked by success, then the 95% Wilson interval's lower end, then cost per "
        "task; pass@k: some of k epochs passed, pass^k: all of k; * cost of the priced "
        "episodes only[/]"
    )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>toolproof leaderboard: {{ suite.suite }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse}td,th{padding:.3rem .6rem;border-bottom:1px solid #ddd;
text-align:left}th{background:#f4f4f4}.dim{color:#666}
</style></head><body>
<h1>Leaderboard: {{ suite.suite }} {{ suite.version }}</h1>
<p class="dim">track {{ suite.track }}, seed {{ suite.seed }}; {{ rows|length }} run(s)</p>
<table id="leaderboard"><thead><tr>
{% for key, title in columns %}<th>{{ title }}</th>{% endfor %}
</tr></thead><tbody>
{% for row in rows %}<tr>{% for key, title in columns %}<td>{{ row[key] }}</td>{% endfor %}
</tr>{% endfor %}
</tbody></table>
<ul>{% for line in pairs %}<li>{{ line }}</li>{% endfor %}</ul>
<p class="dim">Ranked by success, then the 95% Wilson interval's lower end, then cost per
task. pass@k: some of k epochs passed; pass^k: all of k.</p>
</body></html>
"""


def render_leaderboard_html(board: Leaderboard) -> str:
    """The board as one self-contained HTML page (no script, no network)."""
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    return env.from_string(_PAGE).render(**context(board))


def write_leaderboard_html(board: Leaderboard, target: Path) -> None:
    """Write :func:`render_leaderboard_html` to ``target``."""
    target.write_text(render_leaderboard_html(board), encoding="utf-8")
