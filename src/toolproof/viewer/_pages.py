"""The HTML pages: small server-rendered shells; the page scripts fill them from the API."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from toolproof.results import RunReader

from ._api import ApiError, run_path

TEMPLATES = Path(__file__).parent / "templates"


@cache
def environment() -> Environment:
    """The Jinja environment of the viewer's templates (autoescaping on)."""
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def compile_templates() -> None:
    """Compile every page template now (at start-up), not on the first request of each:
    the first page of a fresh viewer then costs what any later one does."""
    env = environment()
    for template in sorted(TEMPLATES.glob("*.j2")):
        env.get_template(template.name)


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render a page template."""
    html = environment().get_template(name).render(**context)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def runs_page(request: Request) -> HTMLResponse:
    """The runs list."""
    return render("runs.html.j2", page="runs", title="Runs")


def run_page(request: Request) -> HTMLResponse:
    """One run: metrics, charts and the episode table."""
    run_id = request.path_params["run"]
    run_path(request, run_id)
    return render("run.html.j2", page="run", title=run_id, run_id=run_id)


def episode_page(request: Request) -> HTMLResponse:
    """One episode, replayed step by step."""
    run_id, key = request.path_params["run"], request.path_params["key"]
    with RunReader(run_path(request, run_id)) as reader:
        if not reader.rows(where="key = ?", params=(key,), limit=1):
            raise ApiError(404, f"run {run_id!r} has no episode {key!r}")
    return render(
        "episode.html.j2", page="episode", title=f"{key} · {run_id}", run_id=run_id, key=key
    )


def compare_page(request: Request) -> HTMLResponse:
    """Two runs side by side."""
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b:
        raise ApiError(400, "pick two runs to compare on the runs page")
    run_path(request, a)
    run_path(request, b)
    return render("compare.html.j2", page="compare", title=f"{a} vs {b}", a=a, b=b)


async def page_error(request: Request, exc: Exception) -> HTMLResponse:
    """Answer an :class:`ApiError` on a page as an HTML error page (JSON under /api)."""
    assert isinstance(exc, ApiError)
    return render(
        "error.html.j2", status=exc.status, page="error", title="Not found", message=exc.message
    )


ROUTES = [
    Route("/", runs_page),
    Route("/runs/{run}", run_page),
    Route("/runs/{run}/episodes/{key}", episode_page),
    Route("/compare", compare_page),
]
