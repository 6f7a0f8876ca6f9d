"""Named baseline runs, kept per suite version, to check new runs against.

Layout of the baselines directory (default ``.toolproof/baselines``)::

    <suite>/<version>/<NAME>/run.db          a consistent copy of the run's database
                            /trajectories.jsonl  its trajectories (copied after the database:
                                             every row's line is in the copy)
                            /summary.json    the run's summary, when it had one
                            /baseline.json   name, suite, version, digest, track, agent,
                                             source run, saved_at

Saving again under the same name replaces the baseline. A check finds the
baseline of the run's own suite name and version, then compares
(:func:`toolproof.metrics.compare.compare_runs`) with the baseline as run A.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolproof.results import DB_NAME, SUMMARY, TRAJECTORIES, RunReader
from toolproof.spec import ToolproofError

from .compare import identity

DEFAULT_BASELINES_DIR = Path(".toolproof") / "baselines"
INFO = "baseline.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class BaselineError(ToolproofError):
    """A baseline cannot be saved or found."""


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise BaselineError(
            f"baseline name {name!r} is not allowed: use letters, digits, '_', '.' and '-' "
            "(at most 64, starting with a letter or digit), e.g. 'main' or 'gpt-4o.v2'"
        )


def _segment(value: Any, what: str) -> str:
    text = str(value)
    if not text or text in (".", "..") or "/" in text or "\\" in text:
        raise BaselineError(f"the run's suite {what} {value!r} cannot name a directory")
    return text


def _run_identity(run_dir: Path, *, to_keep: bool = False) -> dict[str, Any]:
    """The run's identity; ``to_keep``: refuse a run that scored nothing (as a baseline)."""
    with RunReader(run_dir) as reader:
        meta = reader.meta()
        episodes = reader.count()
        scored = len(reader.rows(where="termination != 'infra_error'"))
    if not meta.get("suite"):
        raise BaselineError(f"{run_dir} records no suite; is it a finished toolproof run?")
    if episodes == 0:
        raise BaselineError(f"{run_dir} holds no episodes; nothing to keep as a baseline")
    if to_keep and scored == 0:
        raise BaselineError(
            f"{run_dir} has no scored episodes ({episodes} of {episodes} were infrastructure "
            "errors); nothing to keep as a baseline. Fix: see `toolproof show "
            f"{run_dir} --failures` for the errors, then rerun"
        )
    return identity(meta, run_dir)


def baseline_dir(root: Path, suite: str, version: str, name: str) -> Path:
    """Where a named baseline of a suite version lives."""
    _check_name(name)
    return root / _segment(suite, "name") / _segment(version, "version") / name


def save_baseline(name: str, run_dir: Path, root: Path = DEFAULT_BASELINES_DIR) -> Path:
    """Keep a run as the baseline ``name`` of its suite version (replacing an older one).

    Returns:
        The baseline's directory.

    Raises:
        BaselineError: bad name, the directory is not a finished run, or it
            scored no episode (every one an infra error).
        FileNotFoundError: ``run_dir`` is not a run.
    """
    ident = _run_identity(run_dir, to_keep=True)
    target = baseline_dir(root, ident["suite"], ident["version"], name)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        source = sqlite3.connect(f"file:{run_dir / DB_NAME}?mode=ro", uri=True)
        copy = sqlite3.connect(staging / DB_NAME)
        try:
            source.backup(copy)  # consistent even while the run's WAL is open
        finally:
            copy.close()
            source.close()
        if (run_dir / TRAJECTORIES).is_file():  # appended only: it holds every copied row's line
            shutil.copyfile(run_dir / TRAJECTORIES, staging / TRAJECTORIES)
        if (run_dir / SUMMARY).is_file():
            shutil.copyfile(run_dir / SUMMARY, staging / SUMMARY)
        info = {
            "name": name,
            **{k: ident[k] for k in ("suite", "version", "digest", "seed", "track", "agent")},
            "source": str(run_dir.resolve()),
            "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (staging / INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def list_baselines(root: Path = DEFAULT_BASELINES_DIR) -> list[dict[str, Any]]:
    """Every saved baseline's info (``baseline.json`` plus its ``path``), sorted."""
    found = []
    for info in sorted(root.glob(f"*/*/*/{INFO}")):
        data = json.loads(info.read_text())
        data["path"] = str(info.parent)
        found.append(data)
    return found


def find_baseline(name: str, run_dir: Path, root: Path = DEFAULT_BASELINES_DIR) -> Path:
    """The baseline ``name`` of the run's suite version.

    Raises:
        BaselineError: there is none; the message lists the baselines there are
            for that suite.
    """
    ident = _run_identity(run_dir)
    target = baseline_dir(root, ident["suite"], ident["version"], name)
    if (target / DB_NAME).is_file():
        return target
    others = [
        f"{b['name']} (v{b['version']})"
        for b in list_baselines(root)
        if b["suite"] == ident["suite"]
    ]
    known = ", ".join(others) if others else "none"
    raise BaselineError(
        f"no baseline {name!r} for suite {ident['suite']} v{ident['version']} in {root}; "
        f"baselines of {ident['suite']}: {known}. "
        f"Save one with: toolproof baseline save {name} RUN_DIR"
    )
