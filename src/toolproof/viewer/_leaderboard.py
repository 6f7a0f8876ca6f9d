"""The leaderboard page: any number of runs ranked (``/leaderboard?run=A&run=B...``; no
``run``: every listed run), rendered server-side from the same
:func:`toolproof.report.leaderboard.context` as the console and the HTML file, so the
three show one ranking. Runs that cannot be ranked together get the reasons, as a 400.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from ._api import ApiError, catalog, run_path
from ._pages import render

if TYPE_CHECKING:
    from toolproof.metrics.leaderboard import Leaderboard


def _board(request: Request) -> tuple[list[str], Leaderboard]:
    from toolproof.metrics.leaderboard import LeaderboardMismatch, leaderboard

    ids = request.query_params.getlist("run") or list(catalog(request).runs())
    if not ids:
        raise ApiError(404, f"no run in {catalog(request).root} to rank")
    paths = [run_path(request, run_id) for run_id in ids]
    try:
        return ids, leaderboard(paths)
    except LeaderboardMismatch as exc:
        raise ApiError(400, str(exc)) from None


def leaderboard_page(request: Request) -> HTMLResponse:
    """The ranked runs, their confidence intervals, spend and adjacent pairwise tests."""
    from toolproof.metrics._board_text import context

    ids, board = _board(request)
    return render(
        "leaderboard.html.j2",
        page="leaderboard",
        title="Leaderboard",
        ids=ids,
        **context(board),
    )


def leaderboard_api(request: Request) -> JSONResponse:
    """The same board as JSON (``toolproof leaderboard --json``'s document)."""
    _, board = _board(request)
    return JSONResponse(board.to_dict(), headers={"Cache-Control": "no-store"})


ROUTES = [
    Route("/leaderboard", leaderboard_page),
    Route("/api/leaderboard", leaderboard_api),
]
