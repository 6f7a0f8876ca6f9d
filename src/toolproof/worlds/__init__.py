"""The state an episode acts on.

Map::

    World = records (in-memory JSON, see records.py) + workspace (a real directory,
            see workspace.py) -> digest / snapshot (BlobStore) / restore / diff
"""

from . import records
from .blobs import BlobStore
from .workspace import VIRTUAL_ROOT, PathEscapeError, Workspace
from .world import World, WorldSnapshot

__all__ = [
    "VIRTUAL_ROOT",
    "BlobStore",
    "PathEscapeError",
    "Workspace",
    "World",
    "WorldSnapshot",
    "records",
]
