"""docs/metrics.md names exactly what summary.json and the comparison hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from metrics_helpers import call, check, record, step

from toolproof.metrics import summarize
from toolproof.metrics.compare import METRICS
from toolproof.trajectory import Usage

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"
PROPORTION = {"successes", "n", "rate", "ci_low", "ci_high", "empty"}


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def _documented(title: str) -> list[str]:
    """Every name in the first column of the section's tables, made absolute."""
    names = []
    for line in _section(title).splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        found = re.findall(r"`([^`]+)`", first)
        parent = found[0].rsplit(".", 1)[0]
        names += [found[0], *(n if "." in n else f"{parent}.{n}" for n in found[1:])]
    return names


def _summary() -> dict[str, Any]:
    judge = check(
        "judge",
        data={"usage": {"input_tokens": 5, "output_tokens": 1, "cost_usd": None}, "samples": [{}]},
    )
    evidence = check("evidence", data={"hits": ["x"], "missing": []})
    steps = [
        step(
            0,
            [call("get", {"id": "A"}), call("nope", error_kind="unknown_tool")],
            usage=Usage(input_tokens=3),
        )
    ]
    records = [
        record("a", epoch, steps=steps, checks=[judge, evidence], tags=["x"], judged=True)
        for epoch in range(2)
    ]
    return summarize(records, {"planned": 2})


def _resolve(node: Any, path: str) -> Any:
    for part in path.replace("[]", ".[]").split("."):
        if part == "[]":
            assert isinstance(node, list) and node, path
            node = node[0]
        elif part.startswith("<"):
            assert isinstance(node, dict) and node, path
            node = next(iter(node.values()))
        else:
            assert isinstance(node, dict) and part in node, f"{path}: no {part!r}"
            node = node[part]
    return node


@pytest.mark.parametrize("title", ["The metric block", "Per task"])
def test_every_documented_name_is_in_the_summary(title: str) -> None:
    summary = _summary()
    names = _documented(title)
    assert len(names) > 10
    for name in names:
        _resolve(summary, name)


def test_every_metric_in_the_summary_is_documented() -> None:
    summary = _summary()
    documented = _documented("The metric block")
    fixed = {
        "toolproof_summary",
        "suite",
        "agent",
        "model",
        "track",
        "config",
        "environment",
        "breakdown",
        "tasks",
    }
    for key, value in summary.items():
        if key in fixed:
            continue
        assert any(n == key or n.startswith(key + ".") for n in documented), key
        if isinstance(value, dict) and not any(n.startswith(f"{key}.<") for n in documented):
            for sub in value:
                path = f"{key}.{sub}"
                if sub in PROPORTION and key in documented:
                    continue  # the fields of a proportion are defined once, under Conventions
                assert any(n == path or n.startswith(path + ".") for n in documented), path
    dimensions = {n.split(".")[1] for n in _documented("Breakdown")}
    assert dimensions == set(summary["breakdown"])


def test_the_comparison_metrics_are_documented() -> None:
    names: set[str] = set()
    for line in _section("Comparison").splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([^`]+)`", line.split("|")[1]))
    assert names == set(METRICS)
