"""The C spawner (``_spawner.c``) and the Python one (``_spawner_main.py``) agree.

Each is run directly here, as root (as CI runs), on a socket this test holds and with
no cgroup: the same requests, hostile ones included, get the same kind of answer, and
nothing a request says ever starts a command as root. The C one (and the Python one
through the exec helper) is skipped where no C compiler exists (the harness then runs
the Python one, forking).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.sandbox import SANDBOX_GID, SANDBOX_UID
from toolproof.sandbox.bwrap import _spawner as spawner_module
from toolproof.sandbox.bwrap._exec_helper import exec_helper, native_spawner
from toolproof.sandbox.bwrap._spawner import Spawner, SpawnerBroken

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "25"))
_PATH = "/usr/bin:/bin"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the spawner runs as root only")


def _program(kind: str, fd: int) -> list[str]:
    if kind == "python":  # forks, Python in the child
        return [sys.executable, "-I", "-S", str(spawner_module._HELPER), str(fd)]
    if kind == "python, exec helper":  # posix_spawn of the exec helper
        helper = exec_helper()
        if helper is None:
            pytest.skip("no C compiler: no exec helper")
        python = [sys.executable, "-I", "-S", str(spawner_module._HELPER)]
        return [*python, str(fd), "--exec-helper", helper]
    if shutil.which("cc") is None:
        pytest.skip("no C compiler: the harness runs the Python spawner")
    path = native_spawner()
    assert path is not None
    return [path, str(fd)]


@pytest.fixture(params=["native", "python", "python, exec helper"])
def spawner(request: pytest.FixtureRequest) -> Iterator[Spawner]:
    """A spawner with no cgroup, driven through the harness's own ``Spawner`` code."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    proc = subprocess.Popen(
        _program(request.param, theirs.fileno()), pass_fds=(theirs.fileno(),),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={},
    )  # fmt: skip
    theirs.close()
    fake = Spawner.__new__(Spawner)
    fake.sock, fake._buffer, fake.proc = ours, bytearray(), proc
    fake._pending, fake._checked_at, fake.helped = True, 0.0, 0
    try:
        fake._await_ready()
        yield fake
    finally:
        ours.close()
        proc.wait(timeout=30)


def _run(spawner: Spawner, argv: object, **fields: object) -> tuple[dict[str, object], bytes]:
    """Send one request with stdin, stdout and stderr; (its reply, what it printed).

    Programs are named by absolute path: the Python spawner's fork searches ``PATH``
    with Python code that imports a module after the uid drop, which the sandbox user
    cannot read here (the harness's own requests always name ``bwrap`` by its path).
    """
    request: dict[str, object] = {"argv": argv, "env": {"PATH": _PATH}, "cwd": "/",
                                  "uid": SANDBOX_UID, "gid": SANDBOX_GID, "rlimits": [],
                                  "fds": [0, 1, 2]}  # fmt: skip
    request.update(fields)
    read, write = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        wanted = request["fds"]
        spawner.send(
            request, [null, write, null][: len(wanted)] if isinstance(wanted, list) else []
        )
    finally:
        os.close(write)
        os.close(null)
    reply = spawner.receive(30)
    with os.fdopen(read, "rb") as out:
        printed = out.read() if "started" in reply else b""
    if "started" in reply:
        ended = spawner.receive(30)
        assert ended.get("exit") == reply["started"], ended
        reply["status"] = ended["status"]
    return reply, printed


def test_a_command_runs_as_the_sandbox_user_with_exact_bytes(spawner: Spawner) -> None:
    odd = os.fsdecode(b"\xff\xfe") + "\U0001f600" + "\u00e9"  # undecodable, astral, accented
    script = (
        'id -u; id -G; printf %s "$1" | od -An -tx1; cat /proc/self/oom_score_adj; '
        "ulimit -St; ulimit -Ht; pwd; exec ls /proc/self/fd"
    )
    reply, printed = _run(spawner, ["/bin/sh", "-c", script, "sh", odd],
                          rlimits=[[0, 9, 10]], cwd="/usr")  # fmt: skip
    assert reply.get("helped") is not None and reply["status"] == 0, reply
    lines = printed.decode().split("\n")
    at = lines.index("/usr")  # pwd: od's lines come before, ls's after
    uid, groups, *hexes, adj, soft, hard = lines[:at]
    assert (uid, groups, adj) == (str(SANDBOX_UID), str(SANDBOX_GID), "0")
    assert (soft, hard) == ("9", "10")
    assert set(lines[at + 1 :]) - {"3", ""} == {"0", "1", "2"}  # the socket and the rest closed
    assert bytes.fromhex("".join(hexes)) == os.fsencode(odd)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"argv": []}, "bad request"),
        ({"argv": "/usr/bin/id"}, "bad request"),
        ({"uid": 0}, "bad request"),
        ({"gid": 0}, "bad request"),
        ({"uid": True}, "bad request"),
        ({"uid": 1.5}, "bad request"),
        ({"env": {"A": 1}}, "bad request"),
        ({"rlimits": [["x"]]}, "bad request"),
        ({"rlimits": [[0, 1]]}, "bad request"),
        ({"fds": [1, 1]}, "bad request"),
        ({"fds": [70000]}, "bad request"),
        ({"cwd": 5}, "bad request"),
        ({"cwd": "/no/such/dir"}, "could not start '/usr/bin/id'"),
        ({"argv": ["/no/such/program"]}, "could not start '/no/such/program'"),
        ({"rlimits": [[999, 1, 1]]}, "could not start '/usr/bin/id'"),
    ],
)
def test_a_bad_request_gets_an_error_and_the_next_one_runs(
    spawner: Spawner, fields: dict[str, object], said: str
) -> None:
    fields = dict(fields)
    reply, _ = _run(spawner, fields.pop("argv", ["/usr/bin/id"]), **fields)
    assert str(reply.get("error", "")).startswith(said), reply
    reply, printed = _run(spawner, ["/usr/bin/id", "-u"])
    assert reply["status"] == 0 and printed == f"{SANDBOX_UID}\n".encode()


@pytest.mark.parametrize(
    "body",
    [b"", b"[1,2]", b"{", b'{"argv": ["a"]} x', b'"\\ud800"', b"\xff", b"nul", b"[" * 5000,
     b'{"argv": ["\\u0000"]}', b"1e999", b"-"],
)  # fmt: skip
def test_a_frame_that_is_not_a_request_is_refused(spawner: Spawner, body: bytes) -> None:
    spawner.sock.sendall(struct.pack(">I", len(body)) + body)
    assert str(spawner.receive(30).get("error", "")).startswith("bad request")
    _, printed = _run(spawner, ["/usr/bin/id", "-u"])
    assert printed == f"{SANDBOX_UID}\n".encode()


@pytest.mark.parametrize(
    "body",
    [
        b'{"argv": ["/usr/bin/id"], "env": {"A": "1", "A": "2"}, "cwd": "/", "uid": %d,'
        b' "gid": %d, "rlimits": [], "fds": [1]}',
        b'{"argv": ["/usr/bin/id"], "env": {}, "cwd": "/nonexistent", "cwd": "/", "uid": %d,'
        b' "gid": %d, "rlimits": [], "fds": [1]}',
    ],
    ids=["env name", "field"],
)
def test_a_repeated_name_in_a_frame_is_a_bad_request(spawner: Spawner, body: bytes) -> None:
    """JSON that repeats an environment name or a field (json.dumps never does): the C
    spawner removed repeated names by comparing every pair (quadratic in a huge env)."""
    body %= (SANDBOX_UID, SANDBOX_GID)
    read, write = os.pipe()
    try:
        socket.send_fds(spawner.sock, [struct.pack(">I", len(body)) + body], [write])
    finally:
        os.close(write)
    os.close(read)
    assert str(spawner.receive(30).get("error", "")).startswith("bad request")
    _, printed = _run(spawner, ["/usr/bin/id", "-u"])
    assert printed == f"{SANDBOX_UID}\n".encode()


@pytest.mark.parametrize(
    ("fields", "step", "code"),
    [
        ({"cwd": "/no/such/dir"}, "chdir", errno.ENOENT),
        ({"argv": ["/no/such/program"]}, "exec", errno.ENOENT),
        ({"argv": ["/no/such/it's"]}, "exec", errno.ENOENT),  # a quote: the same prefix
        ({"argv": ["/etc/passwd"]}, "exec", errno.EACCES),
    ],
)
def test_a_failed_start_says_its_step_and_errno(
    spawner: Spawner, fields: dict[str, object], step: str, code: int
) -> None:
    """What the harness decides from whose failure a start was (``start_failure``)."""
    fields = dict(fields)
    argv = fields.pop("argv", ["/usr/bin/id"])
    assert isinstance(argv, list)
    reply, _ = _run(spawner, argv, **fields)
    assert str(reply.get("error", "")).startswith(f"could not start '{argv[0]}': {step}"), reply
    assert reply.get("errno") == code, reply


@pytest.mark.parametrize(
    "fields",
    [
        {"argv": ["/usr/bin/id", "a\0b"]},
        {"argv": ["/usr/bin/id", "\ud800"]},
        {"argv": ["/usr/bin/id\0x"]},
        {"env": {"PATH": _PATH, "A": "x\0y"}},
        {"env": {"PATH": _PATH, "A\0B": "1"}},  # the C parser kept "A" (red team F5)
        {"env": {"PATH": _PATH, "\udfff": "1"}},
        {"env": {"PATH": _PATH, "A": "\ud800"}},
        {"cwd": "/\0tmp"},
        {"cwd": "/\ud800"},
    ],
)
def test_a_string_no_program_can_be_given_is_a_bad_request(
    spawner: Spawner, fields: dict[str, object]
) -> None:
    """Every spawner answers "bad request" and keeps serving (the Python one crashed on
    these in posix_spawn, which the harness took for its own failure)."""
    fields = dict(fields)
    reply, _ = _run(spawner, fields.pop("argv", ["/usr/bin/id"]), **fields)
    assert str(reply.get("error", "")).startswith("bad request"), reply
    assert spawner.proc.poll() is None
    reply, printed = _run(spawner, ["/usr/bin/id", "-u"])
    assert reply["status"] == 0 and printed == f"{SANDBOX_UID}\n".encode()


def test_a_frame_above_16_mib_ends_it(spawner: Spawner) -> None:
    spawner.sock.sendall(b"\x01\x00\x00\x01")
    with pytest.raises(SpawnerBroken):
        spawner.receive(30)
    assert spawner.proc.wait(timeout=30) == 1


_ID = st.one_of(st.integers(-2, 70000), st.booleans(), st.none(), st.text(max_size=3),
                st.floats(allow_nan=False), st.sampled_from([SANDBOX_UID, 1, 0]))  # fmt: skip
_INT = st.one_of(st.integers(-(2**64), 2**64), st.booleans(), st.text(max_size=2))


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    uid=_ID,
    gid=_ID,
    rlimits=st.lists(st.lists(_INT, max_size=4), max_size=3),
    fds=st.lists(st.integers(-1, 4), max_size=4),
    cwd=st.one_of(st.sampled_from(["/", "/tmp", "", "/nonexistent"]), st.integers()),
)
def test_whatever_a_request_says_nothing_runs_as_root(
    spawner: Spawner, uid: object, gid: object, rlimits: object, fds: object, cwd: object
) -> None:
    script = "id -u >&2; id -u"  # wherever its output goes, the first line says who ran
    reply, printed = _run(spawner, ["/bin/sh", "-c", script], uid=uid, gid=gid, rlimits=rlimits,
                          fds=fds, cwd=cwd)  # fmt: skip
    assert isinstance(reply.get("error"), str) or isinstance(reply.get("started"), int), reply
    assert printed.strip() not in (b"0",), (reply, printed)
    if "started" in reply:
        assert isinstance(uid, int) and uid > 0 and isinstance(gid, int) and gid > 0
    assert spawner.proc.poll() is None  # still serving
    json.dumps(reply)
