"""Progress of a run, for a person at a terminal, a CI log, or a program.

Four modes, one interface (``start``, ``episode``, ``close``):

- ``rich``: a live bar with passed / failed / agent errors / infra errors,
  throughput and ETA (the default on a terminal);
- ``plain``: one line every 10 s or every 10% of the episodes (the default
  without a terminal, e.g. CI logs);
- ``json``: one JSON object per finished episode on stdout, then a final
  ``end`` event written by the run command (for tools that wrap toolproof);
- ``none``: nothing (``--quiet``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolproof.results import EpisodeRecord

MODES = ("auto", "rich", "plain", "json", "none")


@dataclass
class Tally:
    """Live counts of a run's finished episodes (those of this process and earlier ones)."""

    total: int
    done: int = 0
    passed: int = 0
    failed: int = 0
    agent_errors: int = 0
    infra_errors: int = 0
    started: float = field(default_factory=time.monotonic)
    new: int = 0
    """Episodes finished by this process (throughput counts only these)."""

    def add(self, record: EpisodeRecord) -> None:
        """Count one episode finished by this process."""
        self.new += 1
        self.count(record.score.passed, record.score.termination.value)

    def count(self, passed: bool, termination: str) -> None:
        """Count one finished episode (also one stored by an earlier process)."""
        self.done += 1
        if termination == "infra_error":
            self.infra_errors += 1
        elif passed:
            self.passed += 1
        elif termination == "agent_error":
            self.agent_errors += 1
        else:
            self.failed += 1

    def rate(self, now: float) -> float:
        """Episodes per second finished by this process."""
        elapsed = now - self.started
        return self.new / elapsed if elapsed > 0 else 0.0

    def eta_s(self, now: float) -> float | None:
        """Seconds left at the current throughput (None before the first episode)."""
        rate = self.rate(now)
        return (self.total - self.done) / rate if rate > 0 else None

    def counts(self) -> dict[str, int]:
        """The counts as plain data."""
        return {
            "done": self.done,
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "agent_errors": self.agent_errors,
            "infra_errors": self.infra_errors,
        }


def clock_text(seconds: float | None) -> str:
    """``H:MM:SS`` (``-:--:--`` when unknown)."""
    if seconds is None:
        return "-:--:--"
    whole = int(seconds + 0.5)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def status_line(label: str, tally: Tally, now: float) -> str:
    """One self-contained line: counts, share done, throughput, elapsed time and ETA."""
    share = tally.done / tally.total if tally.total else 1.0
    return (
        f"{label}: {tally.done}/{tally.total} ({100 * share:.0f}%)  passed {tally.passed}  "
        f"failed {tally.failed}  agent errors {tally.agent_errors}  "
        f"infra errors {tally.infra_errors}  {tally.rate(now):.1f} episodes/s  "
        f"elapsed {clock_text(now - tally.started)}  ETA {clock_text(tally.eta_s(now))}"
    )


class Reporter(Protocol):
    """What the run command drives; ``episode`` is the runner's ``on_episode``."""

    tally: Tally

    def start(self) -> None:
        """Show the starting state."""

    def episode(self, record: EpisodeRecord) -> None:
        """One episode finished (and was stored)."""

    def close(self) -> None:
        """The run ended (or stopped)."""


class Silent:
    """``--quiet``: count, print nothing."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def start(self) -> None:
        """Nothing."""

    def episode(self, record: EpisodeRecord) -> None:
        """Count only."""
        self.tally.add(record)

    def close(self) -> None:
        """Nothing."""


class Plain:
    """A line every ``every_s`` seconds or every ``share`` of the episodes, and at the end."""

    def __init__(
        self,
        tally: Tally,
        label: str,
        stream: IO[str],
        *,
        every_s: float = 10.0,
        share: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tally, self.label, self.stream = tally, label, stream
        self.every_s = every_s
        self.step = max(1, int(tally.total * share))
        self.clock = clock
        self._last_time = clock()
        self._last_done = tally.done

    def _emit(self) -> None:
        now = self.clock()
        self.stream.write(status_line(self.label, self.tally, now) + "\n")
        self.stream.flush()
        self._last_time, self._last_done = now, self.tally.done

    def start(self) -> None:
        """The opening line: what runs and how much is already done."""
        self.stream.write(
            f"{self.label}: {self.tally.total} episodes, {self.tally.done} already done\n"
        )
        self.stream.flush()

    def episode(self, record: EpisodeRecord) -> None:
        """Count; print when enough time or episodes went by."""
        self.tally.add(record)
        due_time = self.clock() - self._last_time >= self.every_s
        if due_time or self.tally.done - self._last_done >= self.step:
            self._emit()

    def close(self) -> None:
        """The closing line (unless the last one said it all)."""
        if self.tally.done != self._last_done or self.tally.new == 0:
            self._emit()


class Json:
    """One JSON object per line on ``stream``: an ``episode`` event per finished episode."""

    def __init__(self, tally: Tally, stream: IO[str]) -> None:
        self.tally, self.stream = tally, stream

    def emit(self, event: dict[str, Any]) -> None:
        """Write one event (a line) and flush, so a reader sees it at once."""
        self.stream.write(json.dumps(event, sort_keys=True) + "\n")
        self.stream.flush()

    def start(self) -> None:
        """A ``start`` event with the plan."""
        self.emit({"event": "start", **self.tally.counts()})

    def episode(self, record: EpisodeRecord) -> None:
        """An ``episode`` event: what ended how, and the running counts."""
        self.tally.add(record)
        score = record.score
        self.emit(
            {
                "event": "episode",
                "key": record.key,
                "task_id": record.task.id,
                "epoch": record.epoch,
                "passed": score.passed,
                "level": score.level.value,
                "termination": score.termination.value,
                "failure_mode": score.failure_mode,
                "error": record.trajectory.error,
                **self.tally.counts(),
            }
        )

    def close(self) -> None:
        """Nothing: the run command writes the ``end`` event once the gate is known."""


class Live:
    """A rich progress bar on a terminal."""

    def __init__(self, tally: Tally, label: str, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.tally, self.label = tally, label
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            console=console,
            transient=True,
        )
        self._bar: Any = None

    def _fields(self) -> dict[str, Any]:
        t, now = self.tally, time.monotonic()
        return {
            "counts": (
                f"[green]passed {t.passed}[/] [red]failed {t.failed}[/] "
                f"[magenta]agent err {t.agent_errors}[/] [yellow]infra err {t.infra_errors}[/]"
            ),
            "rate": f"{t.rate(now):.1f}/s",
            "eta": clock_text(t.eta_s(now)),
        }

    def start(self) -> None:
        """Show the bar."""
        self._progress.start()
        self._bar = self._progress.add_task(
            self.label, total=self.tally.total, completed=self.tally.done, **self._fields()
        )

    def episode(self, record: EpisodeRecord) -> None:
        """Advance the bar."""
        self.tally.add(record)
        self._progress.update(self._bar, completed=self.tally.done, **self._fields())

    def close(self) -> None:
        """Remove the bar."""
        self._progress.stop()


def make_reporter(
    mode: str,
    label: str,
    total: int,
    stored: list[tuple[bool, str]],
    *,
    stdout: IO[str],
    stderr: IO[str],
) -> Reporter:
    """The reporter of ``mode`` (``auto``: ``rich`` on a terminal, else ``plain``).

    Args:
        mode: One of :data:`MODES`.
        label: What runs (``suite / agent``).
        total: Episodes planned.
        stored: ``(passed, termination)`` of the episodes stored before (a resumed run).
        stdout: Where JSON events go.
        stderr: Where the bar and plain lines go.
    """
    tally = Tally(total=total)
    for passed, termination in stored:
        tally.count(passed, termination)
    if mode == "auto":
        mode = "rich" if stderr.isatty() else "plain"
    if mode == "none":
        return Silent(tally)
    if mode == "json":
        return Json(tally, stdout)
    if mode == "plain":
        return Plain(tally, label, stderr)
    from rich.console import Console

    return Live(tally, label, Console(file=stderr))


def default_streams() -> tuple[IO[str], IO[str]]:
    """The process's stdout and stderr (looked up late: tests replace them)."""
    return sys.stdout, sys.stderr
