"""A 50,000-episode run exports in bounded memory: every format streams its episodes.

Tracing every allocation makes reading slow, so the 50,000-episode run is exported once
(CSV: the pipeline every format shares, ``RunSource.records`` and ``tally``); every
format is exported from a 3,000-episode run with the same bound, which a writer that
kept its episodes would pass at neither size.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from toolproof.export import FORMATS, export_run
from toolproof.results import RunStore

from .runs import META, record, tool_steps

LIMIT_BYTES = 8 << 20
"""Peak growth allowed while exporting: far below what holding the episodes would take
(the 50,000 records of the big run are over 100 MB as Python objects)."""


def _run(run_dir: Path, episodes: int, *, steps: bool = True) -> Path:
    """``episodes`` episodes written through RunStore (one record, stored under many keys)."""
    template = record("task", 0, steps=tool_steps() if steps else [])
    store = RunStore(run_dir, commit_every=5000)
    try:
        store.set_meta(META)
        for i in range(episodes):
            task_id = f"task-{i // 5:05d}"
            episode = template.model_copy(
                update={
                    "key": f"{task_id}#{i % 5}",
                    "epoch": i % 5,
                    "task": template.task.model_copy(update={"id": task_id}),
                    "trajectory": template.trajectory.model_copy(
                        update={
                            "episode_id": f"{task_id}#{i % 5}",
                            "task_id": task_id,
                            "epoch": i % 5,
                        }
                    ),
                }
            )
            store.append(episode)
        store.finalize({})
    finally:
        store.close()
    return run_dir


def _peak(run: Path, name: str, out: Path) -> tuple[int, int]:
    """Exported episodes and the peak memory growth of exporting them."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with out.open("wb") as fh:
            count, damaged = export_run(run, name, fh)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert damaged == []
    return count, peak


@pytest.mark.slow
def test_fifty_thousand_episodes_export_in_bounded_memory(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", 50_000, steps=False)
    out = tmp_path / "out.csv"
    count, peak = _peak(run, "csv", out)
    assert count == 50_000
    size = os.path.getsize(out)
    assert peak < LIMIT_BYTES, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"
    assert size > 4 * peak  # the file is far bigger than what exporting it held


@pytest.fixture(scope="module")
def mid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("mid") / "run", 3_000)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_streams(mid_run: Path, tmp_path: Path, name: str) -> None:
    if name == "parquet":
        pytest.importorskip("pyarrow")
    count, peak = _peak(mid_run, name, tmp_path / f"out{FORMATS[name].suffix}")
    assert count == 3_000
    assert peak < LIMIT_BYTES, f"{name}: peak {peak / 1e6:.1f} MB"
