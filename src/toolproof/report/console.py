"""The console summary of a run, read from its directory (never from the engine).

A run with infra errors gets a banner above the numbers ("N of M episodes were
infrastructure errors: not scored; first error: ..."), so it never reads as an
agent that scored 0%.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolproof.metrics.failures import infra_banner, recorded_error
from toolproof.results import RunReader

_LEVEL_STYLE = {"perfect": "green", "acceptable": "green", "partial": "yellow", "fail": "red"}


def version_label(version: object) -> str:
    """``v1.2.0`` for a number-like version; a provided suite's version as it is
    (``bfcl-eval-2026.3.23``, never ``vbfcl-eval-...``)."""
    text = str(version)
    return f"v{text}" if text[:1].isdigit() else text


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def first_infra_error(reader: RunReader) -> str | None:
    """The recorded error of the run's first infra-error episode (task, epoch order)."""
    for row in reader.rows(where="termination = 'infra_error'", limit=5):
        record = reader.record(row["key"])
        error = None if record is None else recorded_error(record)
        if error:
            return error
    return None


def run_banner(reader: RunReader, summary: dict[str, Any]) -> str | None:
    """The infra-error banner of a run (:func:`toolproof.metrics.infra_banner`), or None."""
    eps = summary.get("episodes") or {}
    infra = int(eps.get("infra_errors") or 0)
    if not infra:
        return None
    return infra_banner(infra, int(eps.get("finished") or infra), first_infra_error(reader))


def headline(summary: dict[str, Any]) -> str:
    """One line: success (pass@strict) with its 95% confidence interval, and pass@loose
    when it differs (or why there is nothing to show)."""
    s = summary["success"]
    eps = summary["episodes"]
    if not s.get("n"):
        text = f"no episode scored: success undefined ({eps.get('finished', 0)} finished"
        if eps.get("infra_errors"):
            text += f", {eps['infra_errors']} infra errors"
        return text + ")"
    text = (
        f"success {_pct(s['rate'])} ({s['successes']}/{s['n']}), "
        f"95% CI {_pct(s['ci_low'])}-{_pct(s['ci_high'])}"
    )
    loose = summary.get("pass_loose") or {}
    if loose.get("n") and loose.get("successes") != s.get("successes"):
        # success is pass@strict; loose reads free-text answers to typed-answer tasks too
        text += f"; pass@loose {_pct(loose['rate'])} ({loose['successes']}/{loose['n']})"
    if eps.get("infra_errors"):
        text += f"; {eps['infra_errors']} infra errors excluded"
    if eps.get("task_errors"):
        text += f"; {eps['task_errors']} TASK ERRORS excluded (a broken check of the task)"
    if not eps.get("complete", True):
        text += f"; INCOMPLETE ({eps['finished']}/{eps['planned']} episodes)"
    return text


def agent_spend(summary: dict[str, Any]) -> str:
    """One line of the agent's tokens and cost (total and per finished episode), saying
    when the cost is unknown (unpriced models) or only partly known."""
    tokens = summary.get("tokens") or {}
    cost = summary.get("cost") or {}
    finished = int((summary.get("episodes") or {}).get("finished") or 0)
    total = int(tokens.get("total") or 0)
    text = f"tokens {int(tokens.get('input') or 0)} in + {int(tokens.get('output') or 0)} out"
    if finished:
        text += f" ({total / finished:.0f} per episode)"
    if tokens.get("estimated"):
        text += ", estimated"
    status = cost.get("status")
    usd = cost.get("usd")
    if status == "no_usage" or status is None:
        text += "; cost $0 (no model usage)"
    elif usd is None:
        text += "; cost unknown (unpriced model)"
    else:
        text += f"; cost ${usd:.4f}"
        if finished:
            text += f" (${usd / finished:.4f} per episode)"
        if status == "partial":
            text += f", {cost.get('unpriced_episodes', 0)} unpriced episode(s) not counted"
    return text


def side_spend(summary: dict[str, Any]) -> str | None:
    """One line of what the user model and the judge spent, apart from the agent (or None)."""
    parts = []
    user = summary.get("user_model") or {}
    if user.get("calls"):
        cost = user.get("cost_usd")
        parts.append(
            f"user model {user.get('model')}: {user['calls']} calls ({user.get('cached_calls', 0)} "
            f"cached), {user.get('input_tokens', 0)}+{user.get('output_tokens', 0)} tokens, "
            + ("unpriced" if cost is None else f"${cost:.4f}")
        )
    judge = summary.get("judge") or {}
    if judge.get("checks"):
        tokens = judge.get("tokens") or {}
        usd = (judge.get("cost") or {}).get("usd")
        parts.append(
            f"judge: {judge.get('samples', 0)} samples, "
            f"{tokens.get('input', 0)}+{tokens.get('output', 0)} tokens, "
            + ("unpriced" if usd is None else f"${usd:.4f}")
        )
    return "apart from the agent: " + "; ".join(parts) if parts else None


def agentdojo_lines(summary: dict[str, Any]) -> list[str]:
    """AgentDojo's figures (summary.json's ``agentdojo`` section), one line per suite."""
    section = summary.get("agentdojo")
    if not section:
        return []
    lines = [f"[bold]AgentDojo {section.get('benchmark_version')}[/] (AgentDojo's own verdicts)"]
    for suite, row in section.get("no_attack", {}).items():
        lines.append(f"  {suite}: utility {_pct(row['utility'])} ({row['episodes']} episodes)")
    for attack, suites in section.get("attacks", {}).items():
        for suite, row in suites.items():
            lines.append(
                f"  {suite} / {attack}: utility under attack "
                f"{_pct(row['utility_under_attack'])}, targeted ASR "
                f"{_pct(row['targeted_attack_success_rate'])} ({row['episodes']} episodes)"
            )
    return lines


def print_summary(run_dir: Path, console: Console | None = None, *, tasks: bool = True) -> None:
    """Print the headline, levels, terminations and the per-task table."""
    console = console or Console()
    with RunReader(run_dir) as reader:
        summary = reader.summary()
        exposed = len(reader.rows(where="json_extract(record, '$.isolated') = 0"))
        banner = None if summary is None else run_banner(reader, summary)
    if summary is None:
        console.print(f"[yellow]{run_dir} has no summary.json yet (run unfinished?)[/]")
        return
    suite = summary.get("suite", {})
    console.print(
        f"[bold]{suite.get('name')}[/] {version_label(suite.get('version'))}  "
        f"agent [bold]{summary.get('agent')}[/]"
        f"  track {summary.get('track')}  seed {suite.get('seed')}"
    )
    if banner:
        console.print(
            f"[bold yellow on red] INFRA [/] [bold yellow]{escape(banner)}[/]", soft_wrap=True
        )
        console.print(f"[yellow]see why: toolproof show {escape(str(run_dir))} --failures[/]")
    console.print(f"[bold]{headline(summary)}[/]")
    live = summary.get("live")
    if live:
        source = (
            f"replayed from cassettes sha256 {str(live.get('cassettes_digest'))[:12]}"
            if live.get("mode") == "replay"
            else f"recorded from the real services into {live.get('recorded_to')}"
        )
        console.print(
            f"[bold cyan]LIVE TRACK ({live.get('track')}): {source}; scored apart from the "
            "standard track, never compared with it.[/]"
        )
    if exposed:
        console.print(
            f"[bold red]NOT ISOLATED: {exposed} episode(s) ran commands without a sandbox "
            "(the process backend): their commands could reach this host's files and network.[/]"
        )
    levels = "  ".join(
        f"[{_LEVEL_STYLE.get(k, 'white')}]{k} {v}[/]" for k, v in summary.get("levels", {}).items()
    )
    console.print(f"levels: {levels}")
    terms = "  ".join(f"{k} {v}" for k, v in summary.get("terminations", {}).items())
    console.print(f"terminations: {terms}")
    console.print(escape(agent_spend(summary)))
    stop = (summary.get("episodes") or {}).get("stop_reason")
    if stop:
        console.print(f"[bold yellow]stopped: {escape(str(stop))}[/]")
    spent = side_spend(summary)
    if spent:
        console.print(escape(spent))
    for line in agentdojo_lines(summary):
        console.print(line)
    if not tasks:
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("task", "type", "category", "diff", "passed", "levels"):
        table.add_column(column)
    for task_id, entry in summary.get("tasks", {}).items():
        passed, scored, per_level = _task_counts(entry)
        style = "green" if passed == scored else ("red" if passed == 0 else "yellow")
        levels_text = " ".join(
            f"[{_LEVEL_STYLE.get(level, 'white')}]{level}[/]" + (f" x{count}" if count > 1 else "")
            for level, count in per_level.items()
            if count
        )
        table.add_row(
            task_id,
            entry["type"],
            entry["category"],
            str(entry["difficulty"]),
            f"[{style}]{passed}/{scored}[/]",
            levels_text,
        )
    console.print(table)


def _task_counts(entry: dict[str, Any]) -> tuple[int, int, dict[str, int]]:
    """Passed, scored and episodes per level of one task of a summary (any version)."""
    if "scored" in entry:  # summary.json 3: counts
        return int(entry["passed"]), int(entry["scored"]), dict(entry.get("levels", {}))
    epochs = entry.get("epochs", [])  # older: one entry per episode
    levels: dict[str, int] = {}
    for e in epochs:
        levels[e["level"]] = levels.get(e["level"], 0) + 1
    return sum(1 for e in epochs if e["passed"]), len(epochs), levels
