"""Results on disk: the episode record and the run directory's reader and writer.

Map::

    run_dir/ run.db (meta, episodes + offsets) + trajectories.jsonl (each trajectory, once)
             + summary.json + blobs/
    engine --RunStore.append--> run_dir --RunReader--> metrics, report, viewer
"""

from typing import TYPE_CHECKING, Any

from toolproof._lazy import load_name

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
    return load_name(__name__, _HOME_OF, name)


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
