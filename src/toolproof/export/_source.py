"""A run folder as exporters read it: its facts, its episodes one at a time, its tallies.

Every exporter streams: episodes come from :meth:`RunReader.records` one record at a
time (an SQLite cursor, never a list), and the tallies a format needs before its first
episode (JUnit's counts, Inspect's results) come from a pass over ``RunReader.rows``
in pages of :data:`PAGE` rows. Memory stays flat however many episodes the run holds.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolproof.results import DB_NAME, DamagedRecord, EpisodeRecord, RunReader

PAGE = 1000
"""Rows per page of the tallying pass."""

MODEL_KINDS = ("openai", "anthropic", "litellm", "ollama", "vllm")
"""Agent kinds whose target (``KIND:MODEL``) is the model they call."""


@dataclass
class Tally:
    """Counts over a run's rows (the denominators leave infra errors out, as metrics do)."""

    episodes: int = 0
    infra_errors: int = 0
    passed: int = 0
    fraction_sum: float = 0.0
    duration_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    failed: int = 0

    @property
    def scored(self) -> int:
        """Episodes in the denominator."""
        return self.episodes - self.infra_errors


@dataclass
class RunSource:
    """One run folder opened for export.

    Attributes:
        run_dir: The run folder.
        reader: Its reader (closed by :meth:`close`).
        meta: What the run recorded about itself (config, suite, environment).
        damaged: Episodes that could not be read back and were left out, by key.
    """

    run_dir: Path
    reader: RunReader
    meta: dict[str, Any]
    damaged: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, run_dir: Path) -> RunSource:
        """Open a run folder.

        Raises:
            FileNotFoundError: the folder holds no run.
            RunDirError: its database is damaged.
        """
        reader = RunReader(run_dir)
        try:
            meta = reader.meta()
        except BaseException:
            reader.close()
            raise
        return cls(run_dir, reader, meta)

    def close(self) -> None:
        """Close the reader."""
        self.reader.close()

    def __enter__(self) -> RunSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> dict[str, Any]:
        """The run's configuration (empty for a run that recorded none)."""
        value = self.meta.get("config")
        return value if isinstance(value, dict) else {}

    @property
    def suite(self) -> dict[str, Any]:
        """The suite's name, version, digest and seed."""
        value = self.meta.get("suite")
        return value if isinstance(value, dict) else {}

    @property
    def suite_name(self) -> str:
        """The suite's name (the folder's name when the run recorded none)."""
        return str(self.suite.get("name") or self.run_dir.name)

    @property
    def agent(self) -> str:
        """The agent spec the run used."""
        return str(self.config.get("agent") or "unknown")

    @functools.cached_property
    def model(self) -> str:
        """The model the agent called: ``--model``, else an adapter's ``KIND:MODEL`` target,
        else the agent spec itself (built-in agents call no model)."""
        given = self.config.get("model")
        if isinstance(given, str) and given:
            return given.split(":", 1)[1] if ":" in given else given
        kind, sep, target = self.agent.partition(":")
        if sep and kind in MODEL_KINDS and target:
            return target
        return self.agent

    @property
    def created(self) -> datetime:
        """When the run was last written (its database's modification time), in UTC."""
        stamp = (self.run_dir / DB_NAME).stat().st_mtime
        return datetime.fromtimestamp(stamp, UTC)

    @property
    def provider(self) -> str | None:
        """The provider the agent called (``--model``'s, or an adapter's kind), else None."""
        given = self.config.get("model")
        if isinstance(given, str) and ":" in given:
            return given.split(":", 1)[0]
        kind = self.agent.partition(":")[0]
        return kind if kind in MODEL_KINDS else None

    @functools.cached_property
    def run_id(self) -> str:
        """A stable id of the run: the same folder contents give the same id."""
        material = f"{self.run_dir.resolve()}|{self.suite.get('digest', '')}|{self.agent}"
        return hashlib.sha256(material.encode()).hexdigest()[:22]

    def records(self) -> Iterator[EpisodeRecord]:
        """Every readable episode in task and epoch order, one at a time; damaged ones are
        left out and listed in :attr:`damaged`."""
        return self.reader.records(damaged=self._note)

    def _note(self, exc: DamagedRecord) -> None:
        self.damaged.append(exc.key)

    def tally(self) -> Tally:
        """Counts over every row, read in pages (no trajectory is read)."""
        tally = Tally()
        offset = 0
        while True:
            page = self.reader.rows(limit=PAGE, offset=offset)
            for row in page:
                tally.episodes += 1
                tally.duration_s += float(row["duration_s"])
                if row["termination"] == "infra_error":
                    tally.infra_errors += 1
                    continue
                tally.passed += int(bool(row["passed"]))
                tally.failed += int(not row["passed"])
                tally.fraction_sum += float(row["fraction"])
                tally.input_tokens += int(row["input_tokens"])
                tally.output_tokens += int(row["output_tokens"])
                if row["cost_usd"] is not None:
                    tally.cost_usd = (tally.cost_usd or 0.0) + float(row["cost_usd"])
            if len(page) < PAGE:
                return tally
            offset += PAGE


def check_rows(record: EpisodeRecord) -> list[dict[str, Any]]:
    """The episode's checks as plain rows (name, kind, passed, score, weight, veto, guard)."""
    return [
        {
            "name": c.name,
            "kind": c.kind,
            "passed": c.passed,
            "score": c.score,
            "weight": c.weight,
            "veto": c.veto,
            "guard": c.guard,
            "task_error": c.task_error,
            "detail": c.detail,
        }
        for c in record.score.checks
    ]
