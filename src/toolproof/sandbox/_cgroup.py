"""Per-command cgroups: the pids and memory limits that rlimits cannot give.

A command gets a fresh cgroup under the harness's own cgroup in each controller
hierarchy that can be written here (cgroup v2, or v1 ``pids`` / ``memory``
hierarchies), with ``pids.max`` and the memory limit set. The command joins it
before it execs (see ``join_argv``), so every descendant is counted, can be
found and killed, and leaves a trace when it hits a limit (``pids.events``,
``memory.events`` or ``memory.oom_control``).

Nothing here runs at import; ``host_support`` probes once per process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "JOIN_FAILED",
    "RLIMIT_FAILED",
    "CgroupGate",
    "CgroupSupport",
    "CommandCgroup",
    "host_support",
    "join_argv",
    "join_pid",
]

#: Start of the stderr line written when a command could not join its cgroup.
JOIN_FAILED = b"toolproof-sandbox: cannot join cgroup"
#: Start of the stderr line written when the join script could not set the rlimits.
RLIMIT_FAILED = b"toolproof-sandbox: cannot set the command's rlimits"

_log = logging.getLogger(__name__)
_CONTROLLERS = ("pids", "memory")


@dataclass(frozen=True)
class CgroupSupport:
    """Where per-command cgroups can be made, per controller.

    Attributes:
        parents: Controller name -> (cgroup version, directory to create children in).
    """

    parents: dict[str, tuple[int, Path]]

    def has(self, controller: str) -> bool:
        """True when a cgroup with ``controller`` can be created."""
        return controller in self.parents


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        if not sep:
            continue
        parts, rest = head.split(), tail.split()
        if len(parts) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((parts[3], parts[4], rest[0], set(rest[2].split(","))))
    return found


def _writable(parent: Path) -> bool:
    probe = parent / f"toolproof-probe-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def detect(mountinfo: str, self_cgroup: str) -> CgroupSupport:
    """Find writable cgroup parents for the ``pids`` and ``memory`` controllers.

    Args:
        mountinfo: Text of ``/proc/self/mountinfo``.
        self_cgroup: Text of ``/proc/self/cgroup``.
    """
    own: dict[str, str] = {}
    for line in self_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        key = "" if hierarchy == "0" and names == "" else names
        own[key] = path
    parents: dict[str, tuple[int, Path]] = {}
    for root, point, fstype, options in _mounts(mountinfo):
        found = own.get("") if fstype == "cgroup2" else _own_v1(own, options)
        if found is None:
            continue
        rel = found[len(root) :] if root != "/" and found.startswith(root) else found
        parent = Path(point) / rel.lstrip("/")
        if fstype == "cgroup2":
            for controller in _v2_controllers(parent):
                parents.setdefault(controller, (2, parent))
        else:
            for controller in _CONTROLLERS:
                if controller in options and controller not in parents and _writable(parent):
                    parents[controller] = (1, parent)
    return CgroupSupport(parents)


def _own_v1(own: dict[str, str], options: set[str]) -> str | None:
    for names, path in own.items():
        if names and set(names.split(",")) & options & set(_CONTROLLERS):
            return path
    return None


def _v2_controllers(parent: Path) -> list[str]:
    """Controllers a child of ``parent`` would get, enabling them when allowed."""
    try:
        enabled = set((parent / "cgroup.subtree_control").read_text().split())
        offered = set((parent / "cgroup.controllers").read_text().split())
    except OSError:
        return []
    for controller in _CONTROLLERS:
        if controller in offered and controller not in enabled:
            # Fails with EBUSY when the parent holds processes itself ("no internal
            # processes" rule); then that controller is simply not used.
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text(f"+{controller}")
                enabled.add(controller)
    usable = [c for c in _CONTROLLERS if c in enabled]
    return usable if usable and _writable(parent) else []


@functools.cache
def host_support() -> CgroupSupport:
    """Probe this host once: which controllers can the harness create cgroups in."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
        self_cgroup = Path("/proc/self/cgroup").read_text()
    except OSError:
        return CgroupSupport({})
    support = detect(mountinfo, self_cgroup)
    _log.debug("cgroup support: %s", support)
    for _, parent in set(support.parents.values()):
        _remove_stale(parent)
    return support


def _remove_stale(parent: Path) -> None:
    """Remove empty cgroups left by toolproof processes that died without cleaning up."""
    try:
        entries = list(parent.glob("toolproof-*-*"))
    except OSError:
        return
    for entry in entries:
        owner = entry.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):  # still busy: leave it
                entry.rmdir()


def join_argv(procs_files: list[Path], argv: list[str], rlimits: str = "") -> list[str]:
    """Wrap ``argv`` so the process writes its pid to ``procs_files`` and then execs.

    Joining before ``exec`` (instead of after spawning) means no child can be
    forked outside the cgroup. A failed write exits 125 with the reason on stderr.
    ``rlimits`` (``ResourceLimits.ulimit_script``) is run before the ``exec``; if it
    fails the command does not run (exit 125, ``RLIMIT_FAILED`` on stderr).
    """
    script = (
        'n=$1; shift; while [ "$n" -gt 0 ]; do { echo $$ > "$1"; } 2>/dev/null || '
        '{ echo "' + JOIN_FAILED.decode() + ' $1; it was removed or is not writable" >&2; '
        "exit 125; }; shift; n=$((n - 1)); done; " + _rlimits_step(rlimits) + 'exec "$@"'
    )
    return ["/bin/sh", "-c", script, "sh", str(len(procs_files)), *map(str, procs_files), *argv]


def _rlimits_step(rlimits: str) -> str:
    """The shell text setting ``rlimits`` or exiting 125 with ``RLIMIT_FAILED``."""
    if not rlimits:
        return ""
    return f'{{ {rlimits}; }} 2>/dev/null || {{ echo "{RLIMIT_FAILED.decode()}" >&2; exit 125; }}; '


def _read(path: str) -> str:
    """The text of a small cgroup file, or "" when it cannot be read (cheap: polled)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", errors="replace")


def join_pid(procs_files: list[Path], pid: int) -> None:
    """Move process ``pid`` into every ``cgroup.procs`` file (the harness, as root).

    Raises:
        OSError: A file could not be written.
    """
    for procs in procs_files:
        fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, str(pid).encode())
        finally:
            os.close(fd)


class CgroupGate:
    """Holds a command that starts as an unprivileged user until it is in its cgroup.

    That user cannot write the root-owned cgroup files, so its first process waits
    on a pipe (``argv``); the harness moves it in (``release``, as root) and then
    writes one line. End of file without that line means the join failed: the
    process exits 125 with ``JOIN_FAILED`` on stderr. Nothing runs before the line
    arrives, so no child can be forked outside the cgroup. Use it as a context
    manager around the start of the process.
    """

    def __init__(self, owner: tuple[int, int]) -> None:
        """Make the pipe; its read end is given to ``owner`` (a root pipe is 0600)."""
        self.fd, self._write = os.pipe()
        self._open = True
        os.fchown(self.fd, *owner)

    def argv(self, argv: list[str], rlimits: str = "") -> list[str]:
        """``argv`` behind the gate (pass ``self.fd`` to the process).

        ``rlimits`` (``ResourceLimits.ulimit_script``) is run once the gate opens,
        before the ``exec``, as in ``join_argv``.
        """
        # dash cannot redirect from a descriptor above 9, so the pipe is opened again by
        # its /proc path. The descriptor stays open below (an empty pipe, writer closed).
        script = (
            'fd=$1; shift; read -r _ < "/proc/self/fd/$fd" || { echo "'
            + JOIN_FAILED.decode()
            + ': the harness could not move the command into it" >&2; exit 125; }; '
            + _rlimits_step(rlimits)
            + 'exec "$@"'
        )
        return ["/bin/sh", "-c", script, "sh", str(self.fd), *argv]

    def release(self, procs_files: list[Path], pid: int) -> None:
        """Move ``pid`` into its cgroup and let it go, or close the gate on failure."""
        try:
            join_pid(procs_files, pid)
            os.write(self._write, b"go\n")
        except OSError as exc:  # the command exits 125 and the caller reports why
            _log.warning("could not move command %s into its cgroup: %s", pid, exc)
        finally:
            self._close_write()

    def abort(self) -> None:
        """Close the gate without letting the command go: it exits 125 unrun."""
        self._close_write()

    def _close_write(self) -> None:
        if self._open:
            self._open = False
            os.close(self._write)

    def __enter__(self) -> CgroupGate:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)
        self._close_write()


class CommandCgroup:
    """The cgroup(s) of one command: created, limited, watched, killed and removed."""

    #: ``kill_all`` may use cgroup v2's ``cgroup.kill`` (every member at once).
    kill_whole = True

    def __init__(self, support: CgroupSupport, *, pids: int | None, memory_mb: int | None) -> None:
        """Create the cgroup directories and write the limits.

        Args:
            support: Where cgroups may be created (from ``host_support``).
            pids: Value for ``pids.max``, or None for no pids cgroup.
            memory_mb: Memory limit in MiB, or None for no memory cgroup.

        Raises:
            OSError: A directory or limit could not be written.
        """
        name = f"toolproof-{os.getpid()}-{os.urandom(6).hex()}"
        self._dirs: dict[str, tuple[int, Path]] = {}
        self._frozen_events: int | None = None
        #: ``kill_all`` set ``pids.max`` to 0: no process can be born in it any more.
        self.frozen = False
        wanted = {"pids": pids, "memory": memory_mb}
        try:
            for controller, value in wanted.items():
                if value is None or not support.has(controller):
                    continue
                version, parent = support.parents[controller]
                path = parent / name
                if not path.exists():
                    path.mkdir()
                self._dirs[controller] = (version, path)
                self._write_limit(controller, version, path, value)
        except OSError:
            self.remove()
            raise

    @staticmethod
    def _write_limit(controller: str, version: int, path: Path, value: int) -> None:
        if controller == "pids":
            (path / "pids.max").write_text(str(value))
            return
        limit = str(value * 1024 * 1024)
        if version == 2:
            (path / "memory.max").write_text(limit)
            for extra, text in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                with contextlib.suppress(OSError):
                    (path / extra).write_text(text)
        else:
            (path / "memory.limit_in_bytes").write_text(limit)
            # Without swap accounting the file is missing; then swap is not limited.
            with contextlib.suppress(OSError):
                (path / "memory.memsw.limit_in_bytes").write_text(limit)

    @property
    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` files a process must write its pid to, one per directory."""
        return sorted({path / "cgroup.procs" for _, path in self._dirs.values()})

    def has(self, controller: str) -> bool:
        """True when this command is limited by ``controller``."""
        return controller in self._dirs

    def _counter(self, controller: str, filename: str, key: str) -> int:
        if controller not in self._dirs:
            return 0
        text = _read(f"{self._dirs[controller][1]}/{filename}")  # polled: no pathlib
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
        return 0

    def pids_hit(self) -> bool:
        """True once a fork or clone failed because ``pids.max`` was reached.

        After ``kill_all`` froze the cgroup, only refusals from before count.
        """
        if self._frozen_events is not None:
            return self._frozen_events > 0
        return self._counter("pids", "pids.events", "max") > 0

    def oom_killed(self) -> bool:
        """True once the kernel OOM-killed a process of this cgroup."""
        if "memory" not in self._dirs:
            return False
        version = self._dirs["memory"][0]
        if version == 2:
            return self._counter("memory", "memory.events", "oom_kill") > 0
        return self._counter("memory", "memory.oom_control", "oom_kill") > 0

    def pids(self) -> set[int]:
        """Process ids currently in this cgroup."""
        found: set[int] = set()
        for _, path in self._dirs.values():
            found.update(int(p) for p in _read(f"{path}/cgroup.procs").split())
        return found

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until it is empty.

        Forks are stopped first (``pids.max`` set to 0), so a tree that forks as fast
        as it is killed cannot keep the cgroup busy: one pass then empties it.

        Returns:
            True when the cgroup is empty afterwards.
        """
        if "pids" in self._dirs and self._frozen_events is None:
            # Refusals from now on are the harness's doing, not the command's.
            self._frozen_events = self._counter("pids", "pids.events", "max")
            with contextlib.suppress(OSError):  # never create the file (fake trees in tests)
                fd = os.open(self._dirs["pids"][1] / "pids.max", os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(fd, b"0")
                    self.frozen = True
                finally:
                    os.close(fd)
        for version, path in self._dirs.values():
            if self.kill_whole and version == 2 and (path / "cgroup.kill").exists():
                with contextlib.suppress(OSError):
                    (path / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout_s
        pause = 0.0005
        while pids := self.pids():
            if time.monotonic() >= deadline:
                return not self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(pause)  # dying takes a moment; a forking tree gets re-killed
            pause = min(pause * 2, 0.02)
        return True

    def remove(self) -> None:
        """Kill what is left and delete the directories (logged, not raised, on failure)."""
        self.kill_all()
        for _, path in self._dirs.values():
            pause, deadline = 0.0005, time.monotonic() + 5.0
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY until the last member is fully gone
                    if time.monotonic() > deadline:
                        break
                    time.sleep(pause)
                    pause = min(pause * 2, 0.05)
            if path.exists():
                _log.warning("could not remove cgroup %s; remove it by hand with rmdir", path)
        self._dirs.clear()
