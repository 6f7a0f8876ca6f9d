"""The static HTML report: one self-contained file (styles, script, data and plotly.js inline).

It opens from ``file://`` with no network, so it works as a CI artifact. Agent
output is untrusted: every value goes through Jinja's autoescaping, and chart
data is embedded as JSON in a ``<script type="application/json">`` element.

Map::

    render_report(run_dir, compare=...) -> _data.load_run (RunReader, summary)
        -> _data.figures (_charts: plotly JSON specs) -> templates/report.html.j2
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from toolproof._version import __version__
from toolproof.spec.errors import ToolproofError

from . import _data, _metrics

TEMPLATES = Path(__file__).parent / "templates"
NONE = "\N{EN DASH}"
"""Shown for a missing value."""
DEFAULT_MAX_TRAJECTORIES = 300
"""Trajectories rendered in full by default (failures first); the rest are listed."""


class MissingExtraError(ToolproofError):
    """An optional dependency the report needs is not installed."""


def plotly_js() -> str:
    """The plotly.js bundle shipped with the ``plotly`` package.

    Raises:
        MissingExtraError: plotly is not installed.
    """
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise MissingExtraError(
            "the HTML report draws its charts with plotly, which is not installed\n"
            "fix: pip install 'toolproof[report]'   (or pass --no-charts)"
        ) from None
    # A literal "</script" would end the inline <script> element early.
    return str(get_plotlyjs()).replace("</script", "<\\/script")


def _pct(value: Any, digits: int = 1) -> str:
    return NONE if not isinstance(value, int | float) else f"{100 * value:.{digits}f}%"


def _secs(value: Any) -> str:
    if not isinstance(value, int | float):
        return NONE
    return f"{1000 * value:.0f} ms" if value < 1 else f"{value:.2f} s"


def _usd(value: Any) -> str:
    if not isinstance(value, int | float):
        return NONE
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _num(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return NONE if value is None else str(value)
    if isinstance(value, int) or (math.isfinite(value) and value.is_integer()):
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def _metric(value: Any, name: str, change: bool = False) -> str:
    """A compared metric's value (or change), in its unit."""
    if not isinstance(value, int | float):
        return NONE
    sign = "+" if change and value > 0 else ""
    if name in ("success", "pass_loose", "hallucination", "fraction") or name.endswith("_rate"):
        return f"{sign}{100 * value:.1f} pts" if change else _pct(value)
    if name.endswith("_s"):
        return sign + _secs(value) if value >= 0 else "-" + _secs(-value)
    if name.endswith("usd"):
        return sign + _usd(value) if value >= 0 else "-" + _usd(-value)
    return sign + _num(value)


def _pvalue(value: Any) -> str:
    if not isinstance(value, int | float):
        return NONE
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@cache
def environment() -> Environment:
    """The report's Jinja environment (autoescaping on for every template)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=_pct, secs=_secs, usd=_usd, num=_num, pretty=_pretty, metric=_metric, pvalue=_pvalue
    )
    return env


def _asset(name: str) -> Markup:
    # Our own static files (no data in them), inlined as they are.
    return Markup((TEMPLATES / name).read_text(encoding="utf-8"))


def render_report(
    run_dir: Path,
    *,
    compare: Path | None = None,
    allow_mismatch: bool = False,
    max_trajectories: int = DEFAULT_MAX_TRAJECTORIES,
    charts: bool = True,
) -> str:
    """The HTML report of a run, optionally compared with an earlier run.

    Args:
        run_dir: The run to report on ("after" in a comparison).
        compare: Another run of the same suite to compare with ("before").
        allow_mismatch: Compare even when suite, seed or track differ.
        max_trajectories: Trajectories rendered in full, failures first.
        charts: Draw charts (needs plotly, the ``report`` extra).

    Raises:
        MissingExtraError: ``charts`` and plotly is not installed.
        FileNotFoundError: a directory is not a run.
        ComparisonMismatch: the runs do not pair and ``allow_mismatch`` is false.
    """
    script = Markup(plotly_js()) if charts else None  # plotly's own bundle, trusted
    data = _data.load_run(run_dir, max_trajectories)
    versus = _data.compare(data, compare, allow_mismatch=allow_mismatch) if compare else None
    figures = _data.figures(data, versus.before if versus else None) if charts else []
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            run=data,
            s=data.summary,
            tasks=_data.task_table(data),
            versus=versus,
            figures=figures,
            plotly_js=script,
            css=_asset("report.css"),
            report_js=_asset("report.js"),
            run_name=run_dir.resolve().name,
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            version=__version__,
            metric_rows=_metrics.metric_rows(data.summary),
            other_blocks=_metrics.other_blocks(data.summary, _KNOWN_SECTIONS),
            docs=_metrics.DOCS,
        )
    )


_KNOWN_SECTIONS = {
    "toolproof_summary",
    "suite",
    "agent",
    "track",
    "config",
    "environment",
    "episodes",
    "success",
    "levels",
    "terminations",
    "failure_modes",
    "breakdown",
    "tasks",
}


def write_report(run_dir: Path, output: Path, **options: Any) -> Path:
    """Render the report of ``run_dir`` (see :func:`render_report`) into ``output``."""
    html = render_report(run_dir, **options)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(html, encoding="utf-8")
    return output
