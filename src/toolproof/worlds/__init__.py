"""The state an episode acts on.

Map::

    World = records (in-memory JSON, see records.py) + workspace (a real directory,
            see workspace.py) -> digest / snapshot (BlobStore) / restore / diff

    workspace.py  agent paths, safe reads and writes      (_safefs.py: openat2, no links,
    _tree.py      scan (digest, snapshot) and restore      no FIFOs, bounded walks)
    _fixtures.py  world.fixtures, copied from inside the suite only
"""

from . import records
from .blobs import BlobStore
from .workspace import (
    VIRTUAL_ROOT,
    LinkError,
    PathEscapeError,
    SpecialFileError,
    WalkBudget,
    Workspace,
    shown,
)
from .world import World, WorldSnapshot

__all__ = [
    "VIRTUAL_ROOT",
    "BlobStore",
    "LinkError",
    "PathEscapeError",
    "SpecialFileError",
    "WalkBudget",
    "Workspace",
    "World",
    "WorldSnapshot",
    "records",
    "shown",
]
