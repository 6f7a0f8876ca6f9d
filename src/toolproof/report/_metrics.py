"""The report's Metrics section: summary.json made readable, with units and definitions.

Each row is one number a person looks for, formatted in its unit (%, s, USD,
calls), with a one-line definition and a link to its section of
``docs/metrics.md``. Blocks this table does not know (a newer summary, the
security block) are still shown, as raw values, under "more".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DOCS = "docs/metrics.md"
"""The page the definitions link to (relative to the project checkout)."""
ANCHORS = ("the-metric-block", "redundancy", "the-llm-judge-check", "comparison")
"""The ``docs/metrics.md`` sections linked (a test checks each heading exists)."""
NONE = "\N{EN DASH}"

SHOWN = {
    "success",
    "pass_strict",
    "pass_loose",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_tasks",
    "levels",
    "efficiency",
    "tool_use",
    "redundancy",
    "latency",
    "tokens",
    "cost",
    "judge",
    "answers",
}
"""Summary blocks the table covers; every other mapping block is listed under "more"."""


@dataclass(frozen=True)
class MetricRow:
    """One row of the Metrics section.

    Attributes:
        group: The heading it is listed under.
        name: Its name in summary.json (dotted path).
        label: What a person calls it.
        value: Formatted, with its unit.
        detail: Context (interval, counts), formatted.
        definition: One line saying what it is.
        anchor: Section of ``docs/metrics.md`` that defines it.
    """

    group: str
    name: str
    label: str
    value: str
    detail: str
    definition: str
    anchor: str = "the-metric-block"

    @property
    def href(self) -> str:
        """The link to its definition."""
        return f"{DOCS}#{self.anchor}"


def _get(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def pct(value: Any) -> str:
    """A proportion as a percentage."""
    return f"{100 * value:.1f}%" if _is_num(value) else NONE


def secs(value: Any) -> str:
    """Seconds, in ms below one second."""
    if not _is_num(value):
        return NONE
    return f"{1000 * value:.1f} ms" if value < 1 else f"{value:.2f} s"


def usd(value: Any) -> str:
    """US dollars."""
    if not _is_num(value):
        return NONE
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def num(value: Any, unit: str = "") -> str:
    """A count or a number, with an optional unit."""
    if not _is_num(value):
        return NONE
    text = f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{text} {unit}".rstrip()


def _ci(block: Any) -> str:
    if not isinstance(block, dict) or not block.get("n"):
        return "no scored episode"
    return (
        f"95% CI {pct(block.get('ci_low'))}\N{EN DASH}{pct(block.get('ci_high'))} · "
        f"{block.get('successes')}/{block.get('n')}"
    )


def _dist(block: Any, fmt: Callable[[Any], str]) -> str:
    if not isinstance(block, dict) or not block.get("n"):
        return "none"
    return f"p95 {fmt(block.get('p95'))} · mean {fmt(block.get('mean'))} · n {block.get('n')}"


def _ratio(value: Any) -> str:
    return f"{value:.2f}\N{MULTIPLICATION SIGN}" if _is_num(value) else NONE


def _ks(block: Any) -> str:
    if not isinstance(block, dict) or not block:
        return NONE
    return " · ".join(f"k={k} {pct(v)}" for k, v in block.items())


def metric_rows(s: dict[str, Any]) -> list[MetricRow]:
    """The Metrics section's rows for a summary.json document, in display order."""
    levels = s.get("levels") or {}
    red = s.get("redundancy") or {}
    use = s.get("tool_use") or {}
    cost = s.get("cost") or {}
    judge = s.get("judge") or {}
    ev = _get(s, "answers.evidence") or {}
    rows = [
        MetricRow(
            "Outcome",
            "success",
            "Success",
            pct(_get(s, "success.rate")),
            _ci(s.get("success")),
            "Scored episodes graded perfect or acceptable (pass@strict: a typed answer "
            "counts only when handed in with submit_answer).",
        ),
        MetricRow(
            "Outcome",
            "pass_loose",
            "Pass (loose)",
            pct(_get(s, "pass_loose.rate")),
            _ci(s.get("pass_loose")),
            "pass@loose: as success, but a free-text answer to a typed-answer task counts "
            "when it names exactly the expected value, no rival and no negation.",
        ),
        MetricRow(
            "Outcome",
            "pass_at_k",
            "pass@k",
            _ks(s.get("pass_at_k")),
            "",
            "Chance that at least one of k epochs of a task passes.",
        ),
        MetricRow(
            "Outcome",
            "pass_hat_k",
            "pass^k",
            _ks(s.get("pass_hat_k")),
            "",
            "Chance that all k epochs of a task pass (consistency).",
        ),
        MetricRow(
            "Outcome",
            "levels",
            "Levels",
            " · ".join(
                f"{k} {levels.get(k, 0)}" for k in ("perfect", "acceptable", "partial", "fail")
            ),
            "",
            "Scored episodes by graded level.",
        ),
        MetricRow(
            "Tool use",
            "efficiency.passed",
            "Step efficiency (passed)",
            _ratio(_get(s, "efficiency.passed.median")),
            _dist(_get(s, "efficiency.passed"), _ratio),
            "Median tool calls / the reference solution's calls; 1.00"
            "\N{MULTIPLICATION SIGN} = as many as the reference. Lower is better.",
        ),
        MetricRow(
            "Tool use",
            "tool_use.calls_per_episode",
            "Tool calls per episode",
            num(use.get("calls_per_episode"), "calls"),
            f"{num(use.get('calls'))} in all",
            "Tool calls in scored episodes, per episode.",
        ),
        MetricRow(
            "Tool use",
            "tool_use.valid_arguments_rate",
            "Valid arguments",
            pct(use.get("valid_arguments_rate")),
            "",
            "Calls whose arguments passed schema validation. Higher is better.",
        ),
        MetricRow(
            "Tool use",
            "tool_use.reference_tool_rate",
            "Reference tools",
            pct(use.get("reference_tool_rate")),
            "",
            "Calls to a tool the reference solution uses.",
        ),
        MetricRow(
            "Tool use",
            "tool_use.error_rate",
            "Tool errors",
            pct(use.get("error_rate")),
            ", ".join(f"{k} {v}" for k, v in (use.get("errors") or {}).items()),
            "Calls whose result was an error, for any reason.",
        ),
        MetricRow(
            "Tool use",
            "redundancy.rate",
            "Redundant calls",
            pct(red.get("rate")),
            f"{num(red.get('repeated'))} repeated · {num(red.get('unused'))} unused of "
            f"{num(red.get('calls'))}",
            "Calls repeated for the same answer or whose result decided nothing; the "
            "reference scores 0. Lower is better.",
            "redundancy",
        ),
        MetricRow(
            "Time",
            "latency.episode_s",
            "Episode time",
            secs(_get(s, "latency.episode_s.median")),
            _dist(_get(s, "latency.episode_s"), secs),
            "Median wall time of a scored episode (scoring excluded).",
        ),
        MetricRow(
            "Time",
            "latency.agent_s.step",
            "Agent time per step",
            secs(_get(s, "latency.agent_s.step.median")),
            _dist(_get(s, "latency.agent_s.step"), secs),
            "Median seconds waiting on the agent (the model) per step.",
        ),
        MetricRow(
            "Time",
            "latency.tool_s.step",
            "Tool time per step",
            secs(_get(s, "latency.tool_s.step.median")),
            _dist(_get(s, "latency.tool_s.step"), secs),
            "Median seconds spent in tools per step.",
        ),
        MetricRow(
            "Tokens and cost",
            "tokens.total",
            "Agent tokens",
            num(_get(s, "tokens.total"), "tokens"),
            f"in {num(_get(s, 'tokens.input'))} · out {num(_get(s, 'tokens.output'))}"
            + (" · estimated" if _get(s, "tokens.estimated") else ""),
            "Agent input plus output tokens, all finished episodes.",
        ),
        MetricRow(
            "Tokens and cost",
            "cost.usd",
            "Agent cost",
            usd(cost.get("usd")),
            str(cost.get("status") or "no_usage").replace("_", " ")
            + (
                f" · {usd(cost.get('per_episode_usd', {}).get('median'))} median per episode"
                if isinstance(cost.get("per_episode_usd"), dict)
                else ""
            ),
            "Agent USD over priced episodes; never shown as $0 when unpriced.",
        ),
        MetricRow(
            "Answers",
            "answers.evidence.hit_rate",
            "Key-evidence hit rate",
            pct(ev.get("hit_rate")),
            f"{num(ev.get('hits'))}/{num(ev.get('required'))}"
            if ev.get("required")
            else "no evidence check",
            "Required evidence strings found in the answers.",
        ),
        MetricRow(
            "Answers",
            "answers.hallucination",
            "Hallucination",
            pct(_get(s, "answers.hallucination.rate")),
            _ci(_get(s, "answers.hallucination")),
            "Scored episodes with a vetoing check (a forbidden claim). Lower is better.",
        ),
    ]
    if judge.get("checks"):
        rows.append(
            MetricRow(
                "Answers",
                "judge",
                "LLM judge",
                f"{num(judge.get('checks'))} checks",
                f"{num(judge.get('samples'))} samples · cost {usd(_get(judge, 'cost.usd'))}",
                "Judge checks, apart from the agent's tokens and cost.",
                "the-llm-judge-check",
            )
        )
    return rows


def other_blocks(s: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """Mapping blocks of the summary that the table does not cover (shown raw)."""
    return {k: v for k, v in s.items() if isinstance(v, dict) and k not in known and k not in SHOWN}
