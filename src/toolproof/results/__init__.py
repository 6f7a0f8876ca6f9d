"""Results on disk: the episode record and the run directory's reader and writer.

Map::

    run_dir/ run.db (meta, episodes + offsets) + trajectories.jsonl (each trajectory, once)
             + summary.json + blobs/
    engine --RunStore.append--> run_dir --RunReader--> metrics, report, viewer
"""

from .reader import DamagedRecord
from .record import EpisodeRecord, TaskFacts
from .store import (
    DB_NAME,
    LOCK_NAME,
    SUMMARY,
    TRAJECTORIES,
    RunDirError,
    RunLock,
    RunLockedError,
    RunReader,
    RunStore,
    UnstorableRecord,
    encode_record,
)

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
