"""Plotly figures of the HTML report, as plain JSON specs (no plotly Python API needed).

Each figure is ``{"title", "data", "layout"}``; the page's script draws it with
the plotly.js bundle embedded in the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

BLUE, GREEN, RED, AMBER, GREY = "#54aeff", "#4ac26b", "#ff8182", "#d4a72c", "#8c959f"
LEVEL_COLOURS = {"perfect": GREEN, "acceptable": "#8ddb8c", "partial": AMBER, "fail": RED}
Figure = dict[str, Any]


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}, "x": 0.01},
        "height": 300,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 60},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "showlegend": False,
        **extra,
    }


MAX_LABEL = 28
"""Characters of a category label drawn; longer ones end in an ellipsis (full text on hover)."""


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "\N{HORIZONTAL ELLIPSIS}"


def _category_layout(labels: Sequence[str]) -> dict[str, Any]:
    """Layout for a category x axis whose labels are never clipped.

    Labels are shortened to :data:`MAX_LABEL` characters, tilted when many, and
    the bottom margin and the figure's height grow with the longest one, so
    plotly never has to cut them at the figure's edge.
    """
    longest = max((len(_short(x)) for x in labels), default=0)
    tilted = len(labels) > 6 or longest * len(labels) > 60
    bottom = 40 + (int(longest * 5.2) if tilted else 10)
    return {
        "xaxis": {"type": "category", "automargin": True, "tickangle": -40 if tilted else 0},
        "margin": {"l": 60, "r": 20, "t": 40, "b": bottom},
        "height": 260 + bottom,
    }


def success_bars(title: str, groups: Sequence[dict[str, Any]]) -> Figure:
    """Success rate per group with asymmetric 95% CI error bars."""
    rates = [g["rate"] for g in groups]
    return {
        "title": title,
        "data": [
            {
                "type": "bar",
                "x": [
                    _short(f"{g['key']} ({g.get('successes', '?')}/{g.get('n', '?')})")
                    for g in groups
                ],
                "customdata": [str(g["key"]) for g in groups],
                "y": rates,
                "marker": {"color": BLUE},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "color": "#24292f",
                    "array": [g.get("ci_high", r) - r for g, r in zip(groups, rates, strict=True)],
                    "arrayminus": [
                        r - g.get("ci_low", r) for g, r in zip(groups, rates, strict=True)
                    ],
                },
                "hovertemplate": "%{customdata}: %{y:.1%}<extra></extra>",
            }
        ],
        "layout": _layout(
            title,
            yaxis={"range": [0, 1.05], "tickformat": ".0%"},
            **_category_layout(
                [f"{g['key']} ({g.get('successes', '?')}/{g.get('n', '?')})" for g in groups]
            ),
        ),
    }


def compare_bars(
    title: str, names: tuple[str, str], groups: dict[str, tuple[float | None, float | None]]
) -> Figure:
    """Success per group in two runs, side by side."""
    keys = list(groups)
    data = [
        {
            "type": "bar",
            "name": name,
            "x": [_short(k) for k in keys],
            "y": [groups[k][i] for k in keys],
            "marker": {"color": colour},
            "hovertemplate": "%{x}: %{y:.1%}<extra>" + name + "</extra>",
        }
        for i, (name, colour) in enumerate(zip(names, (GREY, BLUE), strict=True))
    ]
    return {
        "title": title,
        "data": data,
        "layout": _layout(
            title,
            barmode="group",
            showlegend=True,
            legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
            yaxis={"range": [0, 1.05], "tickformat": ".0%"},
            **_category_layout(keys),
        ),
    }


def counts(
    title: str,
    values: dict[str, int],
    colours: dict[str, str] | None = None,
    horizontal: bool = False,
) -> Figure:
    """A bar per named count."""
    keys = list(values)
    colour = [(colours or {}).get(k, BLUE) for k in keys]
    bar: dict[str, Any] = {
        "type": "bar",
        "marker": {"color": colour},
        "text": [values[k] for k in keys],
        "textposition": "auto",
    }
    if horizontal:
        bar.update(x=[values[k] for k in keys], y=[_short(k) for k in keys], orientation="h")
        longest = max((len(_short(k)) for k in keys), default=0)
        layout = _layout(
            title,
            yaxis={"automargin": True, "autorange": "reversed"},
            height=max(220, 60 + 26 * len(keys)),
            margin={"l": 20 + int(longest * 7), "r": 30, "t": 40, "b": 40},
        )
    else:
        bar.update(x=[_short(k) for k in keys], y=[values[k] for k in keys])
        layout = _layout(title, **_category_layout(keys))
    return {"title": title, "data": [bar], "layout": layout}


def histogram(title: str, values: Sequence[float], unit: str = "", integer: bool = False) -> Figure:
    """The distribution of per-episode values."""
    trace: dict[str, Any] = {"type": "histogram", "x": list(values), "marker": {"color": BLUE}}
    if integer:
        trace["xbins"] = {"size": 1}
    return {
        "title": title,
        "data": [trace],
        "layout": _layout(
            title,
            xaxis={"title": {"text": unit}},
            yaxis={"title": {"text": "episodes"}},
            bargap=0.05,
        ),
    }
