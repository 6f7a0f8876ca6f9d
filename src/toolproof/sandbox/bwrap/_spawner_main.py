"""The per-sandbox spawner: a small root helper that forks each command in its cgroup.

Where a C compiler exists, the harness runs ``_spawner.c`` instead (the same protocol
and child steps, no Python per command); this is the fallback, and the reference.
Run as ``python -I -S _spawner_main.py SOCKET_FD [--exec-helper PATH] PROCS_FILE...``
by ``_spawner``
(stdlib only, nothing from toolproof: ``-I -S`` keeps the environment, the
user's site and the venv out). The harness moves this process into the
sandbox's cgroup(s) once; every command it forks is then *born* there, so no
command pays the per-command cgroup attach (a cgroup v1 ``cgroup.procs`` write
waits for an RCU grace period, ~7-11 ms after idle).

Protocol, on the one socket it inherits (a ``socketpair`` end the harness holds;
no path, so no command can connect to it): frames of a 4-byte big-endian length
and a JSON object. It writes ``{"ready": pid}`` once, then for each request
``{"argv", "env", "cwd", "uid", "gid", "rlimits", "fds"}`` (with ``len(fds)``
descriptors attached by ``SCM_RIGHTS``, put at those numbers in the child) it
answers ``{"started": pid}`` or ``{"error": text}`` (with ``"errno"``, the errno of
the step that failed, when the child failed before its exec: the harness decides from
it whose failure it was, ``_errors.start_failure``), and later
``{"exit": pid, "status": waitstatus}``. A frame that is not understood (a NUL byte or a
lone surrogate in a string included) gets a ``bad request`` answer, as from the C
spawner; a broken frame ends the helper (the harness then falls back).

The child, between ``fork`` and ``exec``: new session, default ``SIGPIPE`` and
``SIGXFSZ``, ``oom_score_adj`` back to 0, its descriptors put in place and all
others closed (the socket too), the rlimits set, no supplementary groups, then
the unprivileged gid and uid. With ``--exec-helper`` (``_exec_helper``: a small C
program) those steps run there: the spawner starts it with ``posix_spawn`` (a
vfork, so neither a copy of this process nor Python runs in the child), which
saves about a millisecond of CPU per command; without it, or when it cannot be
run, the spawner forks and does them in Python (``_child``). The helper dies with
the harness: end of file on the socket (the harness exited or closed it) makes
it SIGKILL every other process in its cgroup(s) and exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
from collections.abc import Iterable
from typing import NamedTuple

_MAX_FRAME = 16 * 1024 * 1024
_MAX_FDS = 16
_HEADER = struct.Struct(">I")


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    body = json.dumps(message).encode()
    sock.sendall(_HEADER.pack(len(body)) + body)


class _Failed(NamedTuple):
    """The command's child failed before its exec: what it said, and the step's errno."""

    text: str
    errno: int | None


class _BadRequest(Exception):
    """A request with a string no program can be given: answered "bad request"."""


class _Broken(Exception):
    """The byte stream cannot be parsed any more: the helper must stop."""


class _Reader:
    """Reassembles frames (and the descriptors sent with them) from the socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.fds: list[int] = []

    def fill(self) -> bool:
        """Read what is there; False at end of file."""
        data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, _MAX_FDS)
        for fd in fds:
            os.set_inheritable(fd, False)
        self.fds.extend(fds)
        if not data:
            return False
        self.buffer.extend(data)
        return True

    def frame(self) -> bytes | None:
        """The next complete frame, or None until more bytes arrive."""
        if len(self.buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self.buffer)
        if size > _MAX_FRAME:
            raise _Broken(f"frame of {size} bytes")
        if len(self.buffer) < _HEADER.size + size:
            return None
        body = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
        del self.buffer[: _HEADER.size + size]
        return body

    def take_fds(self) -> list[int]:
        fds, self.fds = self.fds, []
        return fds


def _all_str(values: Iterable[object]) -> bool:
    """True when every value is a ``str`` (JSON makes no subclass of it): one pass in C,
    for the ~150 words of every request."""
    return set(map(type, values)) <= {str}


def _unrepeated(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's pairs as a dict; ValueError when a name repeats (``json.dumps``
    never writes one; the C spawner refuses it too)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("a JSON object must not repeat a name")
    return obj


def _check(request: object) -> dict[str, object]:
    """The request if it has every field with the right type, else ValueError."""
    if not isinstance(request, dict):
        raise ValueError("a request must be a JSON object")
    argv, env, cwd = request.get("argv"), request.get("env"), request.get("cwd")
    if not isinstance(argv, list) or not argv or not _all_str(argv):
        raise ValueError("argv must be a non-empty list of strings")
    if not isinstance(env, dict) or not _all_str(env) or not _all_str(env.values()):
        raise ValueError("env must map strings to strings")
    if not isinstance(cwd, str):
        raise ValueError("cwd must be a string")
    for key in ("uid", "gid"):
        value = request.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{key} must be a positive integer (never root)")
    rlimits = request.get("rlimits")
    if not isinstance(rlimits, list) or not all(
        isinstance(r, list) and len(r) == 3 and all(isinstance(v, int) for v in r) for r in rlimits
    ):
        raise ValueError("rlimits must be a list of [resource, soft, hard]")
    fds = request.get("fds")
    if not isinstance(fds, list) or not all(
        isinstance(f, int) and not isinstance(f, bool) and 0 <= f < 65536 for f in fds
    ):
        raise ValueError("fds must be a list of descriptor numbers")
    if len(set(fds)) != len(fds):
        raise ValueError("fds must not repeat a number")
    return request


def _child(request: dict[str, object], received: list[int], errw: int) -> None:
    """In the forked child: set everything up and exec; never returns.

    A failed step is written to ``errw`` as ``ERRNO:STEP: WHY`` (as the C spawner's
    child and the exec helper write it; ERRNO empty for an error that has none).
    """
    step = "setsid"
    try:
        targets: list[int] = request["fds"]  # type: ignore[assignment]
        os.setsid()
        signal.pthread_sigmask(signal.SIG_SETMASK, [])  # the helper blocks SIGCHLD
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        step = "oom_score_adj"
        adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
        os.write(adj, b"0")
        os.close(adj)
        step = "fcntl"
        high = max([*targets, 2]) + 1
        errw = fcntl.fcntl(errw, fcntl.F_DUPFD_CLOEXEC, high)
        sources = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, high) for fd in received]
        step = "dup2"
        for source, target in zip(sources, targets, strict=True):
            os.dup2(source, target, inheritable=True)
        keep = sorted({*targets, errw})
        start = 0
        for fd in keep:
            if fd > start:
                os.closerange(start, fd)
            start = fd + 1
        os.closerange(start, 1 << 20)
        step = "setrlimit"
        for which, soft, hard in request["rlimits"]:  # type: ignore[attr-defined]
            resource.setrlimit(which, (soft, hard))
        step = "chdir"
        os.chdir(request["cwd"])  # type: ignore[arg-type]
        uid, gid = request["uid"], request["gid"]
        step = "setgroups"
        os.setgroups([])
        step = "setresgid"
        os.setresgid(gid, gid, gid)  # type: ignore[arg-type]
        step = "setresuid"
        os.setresuid(uid, uid, uid)  # type: ignore[arg-type]
        step = "exec"
        argv: list[str] = request["argv"]  # type: ignore[assignment]
        os.execvpe(argv[0], argv, request["env"])  # type: ignore[arg-type]
    except BaseException as exc:  # any failure is reported, then exit
        try:
            if isinstance(exc, OSError) and exc.errno is not None:
                said = f"{exc.errno}:{step}: {exc.strerror}"
            else:
                said = f":{step}: {type(exc).__name__}: {exc}"
            os.write(errw, said.encode(errors="replace")[:4000])
        finally:
            os._exit(127)


def _passable(request: dict[str, object]) -> None:
    """ValueError when a string of the request cannot reach a program (a NUL byte, a
    lone surrogate): a bad request, refused before any fork (the harness refuses these
    first, ``_args``; the C spawner refuses them as it parses)."""
    env: dict[str, str] = request["env"]  # type: ignore[assignment]
    for text in [*request["argv"], *env, *env.values(), request["cwd"]]:  # type: ignore[misc]
        if "\0" in text:
            raise ValueError(f"{text!r} contains a NUL byte")
        os.fsencode(text)  # UnicodeEncodeError (a ValueError) for a lone surrogate


def _fork(request: dict[str, object], received: list[int]) -> int | _Failed:
    """Fork the command, Python in the child; its pid once it has exec'd, or why not."""
    _passable(request)
    errr, errw = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:
            _child(request, received, errw)
        os.close(errw)
        errw = -1
        return _exec_news(pid, errr, request)
    finally:
        os.close(errr)
        if errw >= 0:
            os.close(errw)


def _exec_news(pid: int, errr: int, request: dict[str, object]) -> int | _Failed:
    """``pid`` once the error pipe reads end of file (it exec'd), else why it failed.

    The child wrote ``ERRNO:STEP: WHY`` (``_child``, the exec helper); the errno is
    passed on as a number of its own.
    """
    chunks = []
    while chunk := os.read(errr, 4096):
        chunks.append(chunk)
    if not chunks:
        return pid
    os.waitpid(pid, 0)
    argv = request["argv"]
    name = argv[0] if isinstance(argv, list) else "?"
    said = b"".join(chunks).decode(errors="replace")
    number, colon, rest = said.partition(":")
    code = int(number) if colon and number.isdigit() and len(number) < 5 else None
    if colon and (code is not None or not number):
        said = rest
    return _Failed(f"could not start '{name}': {said}", code)


def _helped(helper: str, request: dict[str, object], received: list[int]) -> int | _Failed | None:
    """Start the command through the exec helper; its pid, why it failed, or None when
    the helper itself could not be started (nothing ran: the caller forks instead)."""
    targets: list[int] = request["fds"]  # type: ignore[assignment]
    rlimits: list[list[int]] = request["rlimits"]  # type: ignore[assignment]
    errfd = max([*targets, 2]) + 1  # the helper's error pipe, above every target
    keep = [str(target) for target in targets if target > 2]
    args = [
        helper, str(errfd), str(request["uid"]), str(request["gid"]), str(request["cwd"]),
        str(len(keep)), *keep, str(len(rlimits)), *(str(v) for limit in rlimits for v in limit),
        "--", *request["argv"],  # type: ignore[misc]
    ]  # fmt: skip
    errr, errw = os.pipe()
    moved: list[int] = []
    try:
        try:
            # Sources above every target (and the error pipe), so no dup2 lands on one.
            for fd in [*received, errw]:
                moved.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, errfd + 1))
            pairs = zip(moved, [*targets, errfd], strict=True)
            actions = [(os.POSIX_SPAWN_DUP2, src, dst) for src, dst in pairs]
            pid = os.posix_spawn(
                helper, args, request["env"], file_actions=actions, setsid=True,  # type: ignore[arg-type]
                setsigmask=(), setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            )  # fmt: skip
        except OSError as exc:
            print(f"toolproof spawner: the exec helper failed ({exc}); forking", file=sys.stderr)
            return None
        except ValueError as exc:  # a NUL byte or a lone surrogate: nothing started
            raise _BadRequest(str(exc)) from exc
        finally:  # every write end of the error pipe but the helper's, before reading it
            for fd in moved:
                os.close(fd)
            os.close(errw)
        return _exec_news(pid, errr, request)
    finally:
        os.close(errr)


class _Starter:
    """Starts commands: through the exec helper where it can, else by ``_fork``."""

    def __init__(self, helper: str | None) -> None:
        """``helper``: the exec helper's path, or None to always fork."""
        self.helper = helper

    def start(
        self, request: dict[str, object], received: list[int]
    ) -> tuple[int, int, bool] | str | _Failed:
        """Start the command: (pid, pidfd, helped) once it has exec'd, or why it could not.

        Raises:
            _BadRequest: A string of the request cannot reach a program.
        """
        targets = request["fds"]
        if not isinstance(targets, list) or len(targets) != len(received):
            return f"{len(received)} descriptors arrived for {targets!r}"
        started: int | _Failed | None = None
        if self.helper is not None and {0, 1, 2} <= set(targets) and max(targets) < 1024:
            started = _helped(self.helper, request, received)
            if started is None:
                self.helper = None  # it cannot be run (removed meanwhile?): fork from now on
        helped = started is not None
        if started is None:
            try:
                started = _fork(request, received)
            except ValueError as exc:  # _passable
                raise _BadRequest(str(exc)) from exc
        if isinstance(started, _Failed):
            return started
        return started, os.pidfd_open(started), helped


def _kill_cgroups(procs_files: list[str]) -> None:
    """SIGKILL every process but this one in the cgroup(s), a few passes."""
    me = os.getpid()
    for _ in range(50):
        found = False
        for path in procs_files:
            try:
                with open(path) as procs:
                    pids = [int(p) for p in procs.read().split()]
            except (OSError, ValueError):
                continue
            for pid in pids:
                if pid != me:
                    found = True
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        if not found:
            return
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        signal.sigtimedwait([signal.SIGCHLD], 0.02)


def _serve(sock: socket.socket, procs_files: list[str], starter: _Starter) -> None:
    reader = _Reader(sock)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    _send(sock, {"ready": os.getpid()})
    while True:
        for key, _ in sel.select():
            if key.data is not None:  # a child's pidfd: it exited
                pid = key.data
                sel.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                _send(sock, {"exit": pid, "status": status})
                continue
            if not reader.fill():
                _kill_cgroups(procs_files)
                return
            while (body := reader.frame()) is not None:
                received = reader.take_fds()
                try:
                    try:
                        request = _check(json.loads(body, object_pairs_hook=_unrepeated))
                    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeError
                        _send(sock, {"error": f"bad request: {exc}"})
                        continue
                    try:
                        started = starter.start(request, received)
                    except _BadRequest as exc:  # as the C spawner answers it
                        _send(sock, {"error": f"bad request: {exc}"})
                        continue
                    except OSError as exc:  # fork or pipe refused: say so, keep serving
                        started = f"could not start the command: {exc}"
                finally:
                    for fd in received:
                        os.close(fd)
                if isinstance(started, str):
                    _send(sock, {"error": started})
                    continue
                if isinstance(started, _Failed):
                    _send(sock, {"error": started.text, "errno": started.errno})
                    continue
                pid, pidfd, helped = started
                sel.register(pidfd, selectors.EVENT_READ, pid)
                _send(sock, {"started": pid, "helped": helped})


def main(argv: list[str]) -> int:
    """Serve the harness on the inherited socket until it goes away."""
    if len(argv) < 2 or not argv[1].isdigit():
        print("usage: _spawner_main.py SOCKET_FD [--exec-helper PATH] [PROCS_FILE...]",
              file=sys.stderr)  # fmt: skip
        return 2
    fd = int(argv[1])
    helper = None
    procs_files = argv[2:]
    if procs_files[:1] == ["--exec-helper"] and len(procs_files) >= 2:
        helper, procs_files = procs_files[1], procs_files[2:]
    os.set_inheritable(fd, False)
    os.chdir("/")
    # Never the OOM killer's choice (a memory cgroup's victim is its largest task, and
    # cgroup v2 memory.oom.group kills all but these); every child resets it to 0.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as adj:
        adj.write("-1000")
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])  # for sigtimedwait
    sock = socket.socket(fileno=fd)
    try:
        _serve(sock, procs_files, _Starter(helper))
    except (_Broken, OSError) as exc:
        print(f"toolproof spawner: {exc}", file=sys.stderr)
        _kill_cgroups(procs_files)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
