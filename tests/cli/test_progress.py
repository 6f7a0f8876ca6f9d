"""Progress of a run: a line for CI logs, JSON events for programs, silence when asked."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import toolproof_test_agents  # noqa: F401  (registers the test-flaky kind)

from toolproof.cli._progress import Plain, Tally, clock_text, make_reporter, status_line
from toolproof_helpers import CliResult, make_task

Invoke = Callable[..., CliResult]


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(passed: bool, termination: str) -> object:
    from toolproof.results import EpisodeRecord

    record = EpisodeRecord.model_construct()
    score = type("S", (), {"passed": passed, "termination": type("T", (), {"value": termination})})
    object.__setattr__(record, "score", score)
    return record


def test_the_plain_line_counts_every_outcome_with_rate_and_eta() -> None:
    tally = Tally(total=10, started=0.0)
    for passed, termination in [(True, "completed"), (False, "step_limit"),
                                (False, "agent_error"), (False, "infra_error")]:  # fmt: skip
        tally.add(_record(passed, termination))  # type: ignore[arg-type]
    line = status_line("core / oracle", tally, now=2.0)
    assert line.startswith("core / oracle: 4/10 (40%)  passed 1  failed 1  agent errors 1")
    assert "infra errors 1" in line and "2.0 episodes/s" in line
    assert "elapsed 0:00:02" in line and "ETA 0:00:03" in line
    assert clock_text(None) == "-:--:--" and clock_text(3725) == "1:02:05"


def test_plain_prints_every_ten_percent_or_ten_seconds() -> None:
    clock, stream = FakeClock(), io.StringIO()
    reporter = Plain(Tally(total=100, started=0.0), "x", stream, clock=clock)
    reporter.start()
    for _ in range(25):  # 25% in no time: two lines (at 10 and 20)
        reporter.episode(_record(True, "completed"))  # type: ignore[arg-type]
    clock.now = 11.0  # ten seconds on: the next episode prints
    reporter.episode(_record(True, "completed"))  # type: ignore[arg-type]
    reporter.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "x: 100 episodes, 0 already done"
    assert [line.split()[1] for line in lines[1:]] == ["10/100", "20/100", "26/100"]


def test_a_resumed_run_counts_what_was_stored_before() -> None:
    stored = [(True, "completed"), (False, "infra_error")]
    reporter = make_reporter("plain", "x", 5, stored, stdout=io.StringIO(), stderr=io.StringIO())
    assert reporter.tally.counts() == {
        "done": 2, "total": 5, "passed": 1, "failed": 0, "agent_errors": 0, "infra_errors": 1,
    }  # fmt: skip
    assert reporter.tally.rate(reporter.tally.started + 1) == 0.0  # only new episodes count


def test_without_a_terminal_the_run_prints_plain_lines(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task(id=f"t{i}") for i in range(3)])
    result = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "r")
    assert result.code == 0, result.err
    assert "mini / oracle: 3 episodes, 0 already done" in result.err
    assert "mini / oracle: 3/3 (100%)  passed 3  failed 0" in result.err
    assert "success 100.0%" in result.out


def test_json_progress_is_one_event_per_episode_then_the_end(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task(id=f"t{i}") for i in range(3)])
    result = invoke("run", root, "--agent", "oracle", "--json", "-o", tmp_path / "r")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]  # stdout: JSON only
    assert [e["event"] for e in events] == ["start", "episode", "episode", "episode", "end"]
    assert {e["key"] for e in events[1:4]} == {"t0#0", "t1#0", "t2#0"}
    assert events[3]["done"] == 3 and events[3]["passed"] == 3
    assert events[1]["level"] == "perfect" and events[1]["termination"] == "completed"
    end = events[-1]
    assert end["exit_code"] == 0 and end["complete"] is True and end["resume"] is None
    assert end["run_dir"] == str(tmp_path / "r") and end["success"]["rate"] == 1.0
    assert "success 100.0%" in result.err  # the human summary moved to stderr


def test_json_end_event_carries_the_gate(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task(id="infra-a")])
    agent = "test-flaky"  # a keyed test kind registered by toolproof_test_agents
    result = invoke(
        "run", root, "--agent", agent, "--retries", "0", "--progress", "json", "-o", tmp_path / "r"
    )
    assert result.code == 3
    end = json.loads(result.out.splitlines()[-1])
    assert end["exit_code"] == 3 and end["cause"] == "no_scored_episodes"
    assert "HTTP 503" in end["reason"]


def test_quiet_prints_only_the_results_line(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    result = invoke(
        "run", suite_dir([make_task()]), "--agent", "oracle", "-q", "-o", tmp_path / "r"
    )
    assert result.code == 0
    assert result.out == f"results: {tmp_path / 'r'}\n"
    assert result.err == ""


def test_the_live_bar_shows_every_count_throughput_and_eta() -> None:
    from rich.console import Console

    from toolproof.cli._progress import Live

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    reporter = Live(Tally(total=4), "core / oracle", console)
    reporter.start()
    for passed, termination in [(True, "completed"), (False, "infra_error")]:
        reporter.episode(_record(passed, termination))  # type: ignore[arg-type]
    reporter._progress.refresh()
    shown = buffer.getvalue()
    reporter.close()
    assert "core / oracle" in shown and "2/4" in shown
    assert "passed 1" in shown and "failed 0" in shown and "infra err 1" in shown
    assert "/s" in shown and "ETA " in shown


def test_auto_mode_picks_plain_without_a_terminal() -> None:
    from toolproof.cli._progress import Json, Silent

    streams = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    assert isinstance(make_reporter("auto", "x", 1, [], **streams), Plain)
    assert isinstance(make_reporter("json", "x", 1, [], **streams), Json)
    assert isinstance(make_reporter("none", "x", 1, [], **streams), Silent)
