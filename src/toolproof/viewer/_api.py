"""The JSON API behind the pages.

::

    GET /api/runs                                   runs list
    GET /api/runs/{run}                             overview: metrics, breakdowns, distributions
    GET /api/runs/{run}/episodes?q=&level=&...      one page of the episode table
    GET /api/runs/{run}/episodes/{key}              one episode for the replay
    GET /api/runs/{run}/episodes/{key}/steps/{i}/files   file changes of one step
    GET /api/compare?a={run}&b={run}                two runs side by side
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ._catalog import RunCatalog
from ._queries import QueryError, episode_page, parse_query


class ApiError(Exception):
    """An error answered as ``{"error": message}`` with a status code."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def catalog(request: Request) -> RunCatalog:
    """The catalog the app was created with."""
    value = request.app.state.catalog
    assert isinstance(value, RunCatalog)
    return value


def run_path(request: Request, run_id: str) -> Path:
    """The directory of a listed run.

    Raises:
        ApiError: 404 when no such run is listed.
    """
    path = catalog(request).path(run_id)
    if path is None:
        raise ApiError(404, f"no run {run_id!r} in {catalog(request).root}")
    return path


def _json(data: Any) -> JSONResponse:
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


def runs(request: Request) -> JSONResponse:
    """Every run in the folder."""
    return _json({"root": str(catalog(request).root), "runs": catalog(request).cards()})


def run(request: Request) -> JSONResponse:
    """The overview of one run."""
    run_id = request.path_params["run"]
    path = run_path(request, run_id)
    return _json({"id": run_id, **catalog(request).overviews.get(path)})


def episodes(request: Request) -> JSONResponse:
    """One page of the episode table."""
    path = run_path(request, request.path_params["run"])
    try:
        query = parse_query(request.query_params)
    except QueryError as exc:
        raise ApiError(400, str(exc)) from None
    return _json(episode_page(path, query))


def episode(request: Request) -> JSONResponse:
    """One episode, for the replay page."""
    from ._episode import load_episode  # the record models load with the first episode

    path = run_path(request, request.path_params["run"])
    key = request.path_params["key"]
    view = load_episode(path, key)
    if view is None:
        raise ApiError(404, f"run {request.path_params['run']!r} has no episode {key!r}")
    return _json(view)


def files(request: Request) -> JSONResponse:
    """File changes of one step."""
    from ._episode import step_files

    path = run_path(request, request.path_params["run"])
    key, index = request.path_params["key"], request.path_params["index"]
    view = step_files(path, key, index)
    if view is None:
        raise ApiError(404, f"episode {key!r} has no step {index}")
    return _json(view)


def compare(request: Request) -> JSONResponse:
    """Run ``b`` against run ``a``."""
    a, b = request.query_params.get("a"), request.query_params.get("b")
    if not a or not b:
        raise ApiError(400, "compare needs two runs: ?a=RUN&b=RUN")
    cat = catalog(request)
    a_dir, b_dir = run_path(request, a), run_path(request, b)
    data = cat.comparisons.get(a_dir, b_dir)
    return _json({**data, "run_a": cat.card(a, a_dir), "run_b": cat.card(b, b_dir)})


async def api_error(request: Request, exc: Exception) -> JSONResponse:
    """Answer an :class:`ApiError` as JSON."""
    assert isinstance(exc, ApiError)
    return JSONResponse({"error": exc.message}, status_code=exc.status)


ROUTES = [
    Route("/api/runs", runs),
    Route("/api/runs/{run}", run),
    Route("/api/runs/{run}/episodes", episodes),
    Route("/api/runs/{run}/episodes/{key}", episode),
    Route("/api/runs/{run}/episodes/{key}/steps/{index:int}/files", files),
    Route("/api/compare", compare),
]
