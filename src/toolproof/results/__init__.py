"""Results on disk: the episode record and the run directory's reader and writer.

Map::

    run_dir/ run.db (meta, episodes + offsets) + trajectories.jsonl (each trajectory, once)
             + summary.json + blobs/
    engine --RunStore.append--> run_dir --RunReader--> metrics, report, viewer
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._format import DB_NAME, SUMMARY, TRAJECTORIES, RunDirError
from .lock import LOCK_NAME, RunLock, RunLockedError
from .reader import DamagedRecord, RunReader

if TYPE_CHECKING:
    from .record import EpisodeRecord, TaskFacts
    from .store import RunStore, UnstorableRecord, encode_record

_HOME_OF = {
    "EpisodeRecord": "record",
    "TaskFacts": "record",
    "RunStore": "store",
    "UnstorableRecord": "store",
    "encode_record": "store",
}


def __getattr__(name: str) -> Any:
    """The record model and the writer load on first use: reading a run's rows (the
    viewer's first page) needs neither pydantic's record models nor the scoring package
    behind them."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DB_NAME",
    "LOCK_NAME",
    "SUMMARY",
    "TRAJECTORIES",
    "DamagedRecord",
    "EpisodeRecord",
    "RunDirError",
    "RunLock",
    "RunLockedError",
    "RunReader",
    "RunStore",
    "TaskFacts",
    "UnstorableRecord",
    "encode_record",
]
