"""The ``docker`` backend: the shared container implementation through Docker's CLI.

Docker differs from podman in three ways that matter here, all handled in this
module: the engine is a daemon reached through an endpoint (it must be a ``unix://``
socket on this host, since the workspace is bind-mounted from here, and the client is
pointed at it explicitly); a rootful daemon's container root is the host's root (so
the container always runs as a non-root user: the sandbox user when the harness is
root, else the harness's own uid:gid, unless the daemon is rootless); and its
seccomp profile is read from ``docker info``'s security options (a daemon with
``profile=unconfined`` is refused, like one without seccomp).
"""

from __future__ import annotations

import json
import os
from typing import ClassVar

from toolproof.sandbox._container import ContainerSandbox, _ask, _Failure, _no_seccomp
from toolproof.sandbox._engine import ENGINE_PATH, EngineInfo
from toolproof.sandbox._registry import sandbox

__all__ = ["DockerSandbox", "docker_endpoint"]

#: Where a docker client looks when neither DOCKER_HOST nor a context says otherwise.
DEFAULT_ENDPOINT = "unix:///var/run/docker.sock"


def docker_endpoint(path: str) -> str:
    """The daemon address the docker client at ``path`` would use: DOCKER_HOST, else its
    current context's, else the default socket."""
    given = os.environ.get("DOCKER_HOST")
    if given:
        return given
    env = {"PATH": ENGINE_PATH}
    for name in ("HOME", "DOCKER_CONFIG", "DOCKER_CONTEXT"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    found = _ask([path, "context", "inspect", "--format", "{{.Endpoints.docker.Host}}"], env)
    return found.strip() if not isinstance(found, _Failure) and found.strip() else DEFAULT_ENDPOINT


@sandbox("docker")
class DockerSandbox(ContainerSandbox):
    """``docker run`` per command (see the module docstring and ``_container``).

    The container runs as the unprivileged sandbox user when the harness is root,
    as the harness's own uid:gid otherwise (a rootful daemon's root is the host's),
    and as the image's user only under a rootless daemon.
    """

    binary: ClassVar[str] = "docker"
    remove_flags: ClassVar[tuple[str, ...]] = ("--force", "--volumes")

    @classmethod
    def probe(cls, path: str) -> EngineInfo:
        """Find the daemon's endpoint (a local unix socket) and ask it about security."""
        endpoint = docker_endpoint(path)
        if not endpoint.startswith("unix://"):
            return EngineInfo(
                cls.binary,
                path,
                f"docker's endpoint {endpoint!r} is not a unix socket on this host; the "
                "workspace is bind-mounted from this host, so the daemon must run here: set "
                f"DOCKER_HOST={DEFAULT_ENDPOINT} (or the local daemon's socket)",
                endpoint=endpoint,
            )
        env = {"PATH": ENGINE_PATH, "DOCKER_HOST": endpoint}
        done = _ask([path, "info", "--format", "{{json .SecurityOptions}}"], env)
        if isinstance(done, _Failure):
            return EngineInfo(
                cls.binary,
                path,
                f"no Docker daemon answers at {endpoint} ({done}); start dockerd (see "
                "docs/isolation.md for flags that work inside a container) or set DOCKER_HOST",
                endpoint=endpoint,
                client_env=env,
            )
        try:
            options = [str(o) for o in json.loads(done or "[]") or []]
        except (ValueError, TypeError):
            options = []
        seccomp = [o for o in options if o.startswith("name=seccomp")]
        if not seccomp or any("profile=unconfined" in o for o in seccomp):
            reason: str | None = _no_seccomp(cls.binary)
        else:
            reason = None
        rootless = any(o.startswith("name=rootless") for o in options)
        return EngineInfo(cls.binary, path, reason, endpoint, rootless, env)

    def container_user(self) -> tuple[int, int] | None:
        """Never the image's root under a rootful daemon (see the class docstring)."""
        if self.owner is not None:
            return self.owner
        if self.info().rootless:
            return None
        return os.getuid(), os.getgid()
