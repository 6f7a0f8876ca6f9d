"""Who sandboxed commands are on the host.

A sandboxed command must never hold host uid 0: when the harness runs as root (CI,
containers), the bwrap backend runs commands as a dedicated unprivileged host user
instead. Code on the harness side that writes into a workspace (tools, world
building, snapshot restore) gives what it writes to that user, so commands can
change it, and reads the workspace without trusting it.
"""

from __future__ import annotations

import os

__all__ = ["SANDBOX_GID", "SANDBOX_UID", "sandbox_owner"]

#: The host uid/gid sandboxed commands run as when the harness is root. It owns no host
#: file and is in no host group; the range above 60000 is left unallocated by Debian.
SANDBOX_UID = SANDBOX_GID = 64_123


def sandbox_owner() -> tuple[int, int] | None:
    """The host (uid, gid) that must own workspace files, or None to leave them as written.

    None when the harness is not root: commands then run as the harness's own user,
    which already owns what the harness writes.
    """
    if os.geteuid() != 0:
        return None
    return SANDBOX_UID, SANDBOX_GID
