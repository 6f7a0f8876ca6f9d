"""A container engine's CLI as the container backends use it: found, probed, and held.

What reaches the engine is its CLI's argv, so this is where it is checked:
:func:`check_run_argv` accepts only the options the backend writes (each one
``--flag=value`` word, the guarantees all present, ``--`` before the image), and
:func:`check_bind_source` refuses a mount of the host's ``/`` or of anything holding
an engine's socket (a container that can reach the engine's API is root on the host).
:func:`check_image` takes a plain local image reference, never one that reads as a
flag. The probe (:class:`EngineInfo`) is made once per process for each engine,
program path and ``DOCKER_HOST``.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from toolproof.sandbox._args import WORKSPACE
from toolproof.sandbox._errors import SandboxError

__all__ = [
    "ENGINE_PATH",
    "EngineInfo",
    "check_bind_source",
    "check_bind_target",
    "check_image",
    "check_run_argv",
    "engine_sockets",
]

#: PATH for the engine's client and inside the container.
ENGINE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Where engines listen on a host; a mount of one (or of a directory above one) would
#: let the container drive the engine, which is root on the host.
_KNOWN_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
    "/run/docker/containerd/containerd.sock",
    "/run/crio/crio.sock",
)

_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}")

#: The options of ``run`` that must each be present, exactly.
REQUIRED = (
    "--pull=never",
    "--network=none",
    "--cap-drop=ALL",
    "--security-opt=no-new-privileges",
    "--read-only",
    "--init",
)
#: Options whose value the backend computes; anything else is refused.
_VALUED = ("--name=toolproof-", "--label=toolproof.", "--hostname=sandbox", "--tmpfs=/tmp:",
           "--volume=", "--workdir=/", "--user=", "--memory=", "--memory-swap=",
           "--pids-limit=", "--ulimit=", "--env=")  # fmt: skip
_FLAGS = (*REQUIRED, "--interactive")
_USER = re.compile(r"--user=\d+:\d+")


@dataclass(frozen=True)
class EngineInfo:
    """An engine as probed here.

    Attributes:
        binary: The CLI's name (``podman``, ``docker``).
        path: Its absolute path, or None where it is not installed.
        reason: Why it cannot run sandboxes here (with the fix), or None.
        endpoint: The daemon's ``unix://`` address (docker), or None.
        rootless: The engine maps the container's root to the harness's user.
        client_env: The environment the CLI runs with (PATH, and the endpoint).
    """

    binary: str
    path: str | None
    reason: str | None
    endpoint: str | None = None
    rootless: bool = False
    client_env: dict[str, str] = field(default_factory=lambda: {"PATH": ENGINE_PATH})

    def socket(self) -> str | None:
        """The endpoint's socket path, or None."""
        if self.endpoint is None or not self.endpoint.startswith("unix://"):
            return None
        return self.endpoint[len("unix://") :]


def engine_sockets(info: EngineInfo | None = None) -> list[str]:
    """The engine sockets no container may see: the known ones, the user's, the probed one."""
    found = list(_KNOWN_SOCKETS)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        found += [f"{runtime}/docker.sock", f"{runtime}/podman/podman.sock"]
    if info is not None and info.socket():
        found.append(str(info.socket()))
    return found


def check_image(image: str) -> None:
    """Refuse an image reference that is not a plain local name (so never a flag).

    Raises:
        SandboxError: Naming the image and the accepted form.
    """
    if not isinstance(image, str) or _IMAGE.fullmatch(image) is None:
        raise SandboxError(
            f"image {image!r} is not a plain image reference (letters, digits and ._/:@+-, "
            "starting with a letter or digit), e.g. 'localhost/toolproof-py:1'"
        )


def check_bind_source(host: str, info: EngineInfo | None = None) -> None:
    """Refuse a host path to mount that would give a container the host's root.

    That is ``/``, a socket, any path that holds an engine's socket (``/run``,
    ``/var/run``, ...), and a path with ``:`` (the engine's volume syntax would split it).

    Raises:
        SandboxError: Naming the path and why.
    """
    resolved = os.path.realpath(host)
    if resolved == "/":
        raise SandboxError(f"mount source {host!r} is the host's root; a container never gets it")
    if ":" in host or ":" in resolved or "\n" in host:
        raise SandboxError(
            f"mount source {host!r} holds ':' or a newline, which the engine's --volume "
            "syntax would split; move it to a path without them"
        )
    try:
        is_socket = stat.S_ISSOCK(os.stat(resolved).st_mode)
    except OSError:
        is_socket = False
    if is_socket:
        raise SandboxError(f"mount source {host!r} is a socket; a container never gets one")
    for sock in engine_sockets(info):
        real = os.path.realpath(sock)
        for candidate in {sock, real}:
            if candidate == resolved or candidate.startswith(resolved.rstrip("/") + "/"):
                raise SandboxError(
                    f"mount source {host!r} holds the container engine's socket {sock}: a "
                    "container that reaches it is root on this host; mount a narrower path"
                )


def check_bind_target(inside: str) -> None:
    """Refuse a path inside that the engine's ``--volume`` syntax would split or extend.

    Raises:
        SandboxError: Naming the path.
    """
    if ":" in inside or "\n" in inside or "," in inside:
        raise SandboxError(
            f"ro_binds: {inside!r} holds ':', ',' or a newline, which a container engine's "
            "--volume syntax would read as options; choose a plain path inside"
        )


def check_run_argv(
    argv: list[str], workspace: Path, ro_binds: dict[str, str], info: EngineInfo | None = None
) -> None:
    """Check an ``<engine> run`` argv holds every guarantee and nothing else.

    Only the options the backend writes are accepted, each as one word; every one of
    :data:`REQUIRED` must be there; the mounts are the workspace at /workspace and the
    read-only binds, each passing :func:`check_bind_source`; ``--`` ends the options.

    Raises:
        SandboxError: Naming the offending word (a fault in toolproof, not the task).
    """
    if len(argv) < 4 or argv[1] != "run" or "--" not in argv:
        raise SandboxError(f"container argv must be '<engine> run OPTIONS -- IMAGE ...': {argv!r}")
    options = argv[2 : argv.index("--")]
    volumes = {f"--volume={workspace}:{WORKSPACE}"}
    volumes |= {f"--volume={host}:{inside}:ro" for host, inside in ro_binds.items()}
    for word in options:
        if word in _FLAGS:
            continue
        if not word.startswith(_VALUED) or "\0" in word:
            raise SandboxError(f"container option {word!r} is not one toolproof writes; refused")
        if word.startswith("--volume=") and word not in volumes:
            raise SandboxError(f"container mount {word!r} is not the workspace or a checked bind")
        if word.startswith("--user=") and _USER.fullmatch(word) is None:
            raise SandboxError(f"container user {word!r} must be numeric uid:gid")
    missing = [flag for flag in REQUIRED if flag not in options]
    if missing:
        raise SandboxError(f"container argv lacks {', '.join(missing)}; refused")
    for host in [str(workspace), *ro_binds]:
        check_bind_source(host, info)
    for inside in ro_binds.values():
        check_bind_target(inside)
    image = argv[argv.index("--") + 1] if argv.index("--") + 1 < len(argv) else ""
    check_image(image)
