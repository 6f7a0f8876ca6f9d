"""Open the egress proxy for a run: which tasks are live, which cassettes, which secrets."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolproof.spec import Suite
from toolproof.spec.live import live_tasks

from ._cassette import Cassette, CassetteError, cassettes_digest
from ._policy import secret_values
from ._proxy import EgressProxy, Mode, Resolver, TaskAccess

LOG = "live-exchanges.jsonl"
"""Every request the proxy saw (allowed, refused or missed), relative to the run directory."""

RECORDED = "cassettes/live.yaml"
"""Where ``--live record`` stores a run's exchanges, relative to the run directory."""


class LiveError(Exception):
    """A live run cannot start (no cassettes, a secret missing); the message says the fix."""


@dataclass
class LiveRun:
    """A run's proxy and what the run records about it."""

    proxy: EgressProxy
    info: dict[str, Any]
    """``{mode, cassettes, digest, recorded_to}``: the run's ``config.live``."""
    run_dir: Path

    def start(self) -> LiveRun:
        """Start the proxy (on a free loopback port); returns self."""
        self.proxy.start()
        return self

    def close(self) -> None:
        """Stop the proxy, save a recording and append the exchange log to the run."""
        self.proxy.close()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with (self.run_dir / LOG).open("a", encoding="utf-8") as out:
            for entry in self.proxy.log:
                out.write(json.dumps(entry) + "\n")


def shipped_cassettes(suite: Suite) -> Path | None:
    """The suite's shipped cassette directory, if it names one."""
    live = suite.config.live
    if live is None or live.cassettes is None:
        return None
    return (suite.root / live.cassettes).resolve()


def open_live(
    suite: Suite,
    task_ids: list[str],
    *,
    mode: Mode,
    run_dir: Path,
    environ: Mapping[str, str],
    cassettes: list[Path] | None = None,
    resolver: Resolver | None = None,
) -> LiveRun | None:
    """Make the proxy for the live tasks among ``task_ids`` (None when there are none).

    The proxy is not started yet: call :meth:`LiveRun.start` right before the run,
    and :meth:`LiveRun.close` after it.

    Args:
        suite: The loaded suite.
        task_ids: The tasks this run covers.
        mode: ``record`` (real services, saved to ``run_dir/cassettes/live.yaml``) or
            ``replay`` (from ``cassettes``, else the suite's shipped ones).
        run_dir: The run directory.
        environ: Where secrets are read from (the command line passes ``os.environ``).
        cassettes: Cassette files or directories to replay.
        resolver: Test hook for the proxy (see :class:`EgressProxy`).

    Raises:
        LiveError: nothing to replay from, a cassette is unreadable, or a secret is unset.
    """
    specs = live_tasks(suite, task_ids)
    if not specs:
        return None
    access: dict[str, TaskAccess] = {}
    for task_id, spec in specs.items():
        try:
            values = secret_values(spec, environ) if mode == "record" else {}
        except LookupError as exc:
            raise LiveError(f"task {task_id}: {exc}") from None
        access[task_id] = TaskAccess(spec, values)
    info: dict[str, Any] = {"mode": mode, "cassettes": [], "digest": None, "recorded_to": None}
    if mode == "replay":
        paths = list(cassettes or [])
        if not paths:
            shipped = shipped_cassettes(suite)
            if shipped is None:
                raise LiveError(
                    f"suite {suite.name!r} has live tasks but ships no cassettes (live.cassettes "
                    "in suite.yaml); fix: --live record where the services are reachable, or "
                    "--cassettes RUN_DIR/cassettes"
                )
            paths = [shipped]
        try:
            cassette = Cassette.load(paths)
        except CassetteError as exc:
            raise LiveError(str(exc)) from None
        info["cassettes"] = [str(p.resolve()) for p in paths]
        info["digest"] = cassettes_digest(paths)
        proxy = EgressProxy(access, mode="replay", cassette=cassette, resolver=resolver)
    else:
        info["recorded_to"] = RECORDED
        proxy = EgressProxy(access, mode="record", record_to=run_dir / RECORDED, resolver=resolver)
    return LiveRun(proxy, info, run_dir)
