"""The docker backend against its real wire, the CLI's argv: a recording fake ``docker``.

A fake ``docker`` program on PATH records every argv it is given and answers as the
docker CLI does (``info``, ``context inspect``, ``image inspect``, ``run``, ``inspect``,
``rm``, ``ps``). The tests read the recorded argv: every guarantee is there, hostile
task inputs (working directories, variable names, mount sources, images) cannot add a
flag or a mount, and the lifecycle (name, run, inspect, rm; close; the crash sweep)
is what the docs say. tests/sandbox/test_container.py runs the same backend on a real
Docker daemon where one answers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.sandbox import SANDBOX_UID, ResourceLimits, SandboxError, get_backend
from toolproof.sandbox import _container as container_mod
from toolproof.sandbox._container import ContainerSandbox, owner_token, swept_owner
from toolproof.sandbox._docker import DockerSandbox
from toolproof.sandbox._engine import REQUIRED, EngineInfo, check_run_argv

IMAGE = "localhost/toolproof-fake:1"
_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "40"))

_FAKE = r'''#!{python}
"""A stand-in for the docker CLI: records its argv, answers like docker."""
import json, os, sys, time
state_file = {state!r}
with open(state_file) as f:
    state = json.load(f)
args = sys.argv[1:]
state["calls"].append({{"argv": args, "env": dict(os.environ)}})
def save():  # atomically: the test reads the state while a command runs
    with open(state_file + ".new", "w") as f:
        json.dump(state, f)
    os.replace(state_file + ".new", state_file)
save()
cmd = args[0] if args else ""
if cmd == "context":
    print("unix:///var/run/fake-docker.sock")
elif cmd == "info":
    if state.get("info") == "down":
        print("Cannot connect to the Docker daemon", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(state.get("security", ["name=seccomp,profile=default"])))
elif cmd == "image":
    if args[-1] in state["images"]:
        print("sha256:0123")
    else:
        print("Error: No such image: " + args[-1], file=sys.stderr)
        sys.exit(1)
elif cmd == "run":
    name = [a for a in args if a.startswith("--name=")][0][len("--name="):]
    state["containers"].append(name)
    save()
    command = args[args.index("--") + 2:]
    if command[:2] == ["/bin/sh", "-c"] and command[2].startswith("sleep"):
        time.sleep(600)
    print("ran " + name)
    sys.exit(state.get("exit", 0))
elif cmd == "inspect":
    print("true" if state.get("oom") else "false")
elif cmd == "rm":
    names = [a for a in args[1:] if not a.startswith("-")]
    state["containers"] = [c for c in state["containers"] if c not in names]
    save()
elif cmd == "ps":
    print("\n".join(state["containers"]))
else:
    print("unknown command " + cmd, file=sys.stderr)
    sys.exit(2)
'''


class FakeDocker:
    """The fake CLI's state: what it was asked, and what it answers."""

    def __init__(self, folder: Path) -> None:
        self.state = folder / "state.json"
        self.write({"calls": [], "images": [IMAGE], "containers": []})
        program = folder / "docker"
        program.write_text(_FAKE.format(python=sys.executable, state=str(self.state)))
        program.chmod(0o755)
        self.path = program

    def read(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.state.read_text())
        return data

    def write(self, data: dict[str, Any]) -> None:
        fresh = self.state.with_suffix(".tmp")
        fresh.write_text(json.dumps(data))
        fresh.replace(self.state)

    def set(self, **values: object) -> None:
        self.write({**self.read(), **values})

    def calls(self, command: str | None = None) -> list[list[str]]:
        found = [c["argv"] for c in self.read()["calls"]]
        return [c for c in found if command is None or (c and c[0] == command)]

    def containers(self) -> list[str]:
        return list(self.read()["containers"])


def _forget_probes() -> None:
    with container_mod._LOCK:
        container_mod._PROBES.clear()
        container_mod._SWEPT.clear()
        container_mod._IMAGES.clear()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDocker]:
    """A fake docker first on PATH, with DOCKER_HOST unset, probes forgotten."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    fake = FakeDocker(folder)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    _forget_probes()
    yield fake
    _forget_probes()


def _options(argv: list[str]) -> list[str]:
    return argv[2 : argv.index("--")]


def test_run_argv_holds_every_guarantee(fake: FakeDocker, workspace: Path) -> None:
    limits = ResourceLimits(memory_mb=256, pids=32, cpu_s=5, file_size_mb=8, wall_s=30)
    with get_backend("docker")(workspace, limits, image=IMAGE) as box:
        result = box.exec("echo hi", env={"GREETING": "hello"})
    assert result.ok and result.stdout.startswith("ran toolproof-")
    (run,) = fake.calls("run")
    options = _options(run)
    for flag in REQUIRED:
        assert flag in options
    user = str(SANDBOX_UID) if os.geteuid() == 0 else str(os.getuid())
    assert any(o.startswith(f"--user={user}:") for o in options)
    volumes = [o for o in options if o.startswith("--volume=")]
    assert volumes == [f"--volume={box.bind_source}:/workspace"]
    for expected in ("--memory=256m", "--memory-swap=256m", "--pids-limit=32",
                     "--ulimit=cpu=5:6", f"--ulimit=fsize={8 * 1024 * 1024}:{8 * 1024 * 1024}",
                     "--tmpfs=/tmp:rw,mode=1777,size=256m", "--env=GREETING=hello",
                     "--workdir=/workspace"):  # fmt: skip
        assert expected in options
    banned = ("--privileged", "--cap-add", "--device", "--pid=", "--ipc", "--userns", "--net=")
    assert not any(o.startswith(banned) for o in options)
    assert run[run.index("--") + 1 :] == [IMAGE, "/bin/sh", "-c", "echo hi"]
    # The client is pointed at the probed endpoint, with nothing else of the harness's.
    client = next(c for c in fake.read()["calls"] if c["argv"][0] == "run")
    assert client["env"]["DOCKER_HOST"] == "unix:///var/run/fake-docker.sock"
    assert "HOME" not in client["env"]


def test_lifecycle_names_runs_inspects_and_removes(fake: FakeDocker, workspace: Path) -> None:
    with get_backend("docker")(workspace, image=IMAGE) as box:
        box.exec("true")
        box.exec(["echo", "two"])
    order = [c[0] if c[0] != "context" else "context" for c in fake.calls()]
    assert order == ["context", "info", "image", "ps", "run", "inspect", "rm", "run",
                     "inspect", "rm"]  # fmt: skip
    names = [o[len("--name=") :] for c in fake.calls("run") for o in c if o.startswith("--name=")]
    assert len(set(names)) == 2
    assert all(n.startswith(f"toolproof-{owner_token()}-") for n in names)
    assert [c[-1] for c in fake.calls("rm")] == names
    assert all(c[1:3] == ["--force", "--volumes"] for c in fake.calls("rm"))
    assert [c[1:3] for c in fake.calls("inspect")] == [["--format", "{{.State.OOMKilled}}"]] * 2
    assert fake.containers() == []


def test_oom_is_read_back_from_inspect(fake: FakeDocker, workspace: Path) -> None:
    fake.set(oom=True, exit=1)
    with get_backend("docker")(workspace, image=IMAGE) as box:
        result = box.exec("true", limits=ResourceLimits(memory_mb=64))
    assert result.limit_hit == "memory"


def test_wall_time_kills_the_client_and_removes_the_container(
    fake: FakeDocker, workspace: Path
) -> None:
    with get_backend("docker")(workspace, image=IMAGE) as box:
        result = box.exec("sleep 600", limits=ResourceLimits(wall_s=1))
    assert result.limit_hit == "wall_time" and result.exit_code is None
    (run,) = fake.calls("run")
    name = next(o for o in run if o.startswith("--name="))[len("--name=") :]
    assert [name] in [c[3:] for c in fake.calls("rm")]
    assert fake.containers() == []


def test_close_removes_a_container_still_running(fake: FakeDocker, workspace: Path) -> None:
    box = get_backend("docker")(workspace, image=IMAGE)
    worker = threading.Thread(target=box.exec, args=("sleep 600",),
                              kwargs={"limits": ResourceLimits(wall_s=120)})  # fmt: skip
    worker.start()
    deadline = time.monotonic() + 60
    while not fake.containers() and time.monotonic() < deadline:
        time.sleep(0.05)
    (name,) = fake.containers()
    box.close()
    worker.join(60)
    assert not worker.is_alive()
    assert fake.containers() == []
    assert any(name in c for c in fake.calls("rm"))


def test_a_crashed_harness_s_containers_are_swept(fake: FakeDocker, workspace: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_token = owner_token(gone.pid)  # read while it may still run: the start time is kept
    gone.wait()
    orphan = f"toolproof-{dead_token}-00000001"
    mine = f"toolproof-{owner_token()}-00000002"
    parts = owner_token().split("-")
    other_boot = f"toolproof-{'f' * 12}-{parts[1]}-1-1-00000003"
    other_ns = f"toolproof-{parts[0]}-1-{gone.pid}-1-00000004"
    stranger = "someone-elses-container"
    fake.set(containers=[orphan, mine, other_boot, other_ns, stranger])
    assert swept_owner(orphan) and not swept_owner(mine)
    with get_backend("docker")(workspace, image=IMAGE):
        pass
    assert sorted(fake.containers()) == sorted([mine, other_boot, other_ns, stranger])
    with get_backend("docker")(workspace, image=IMAGE):
        pass  # swept once per process and engine
    assert len(fake.calls("ps")) == 1


@pytest.mark.parametrize(
    "image", ["--privileged", "-v", "", " debian", "debian --privileged", "a\nb", "x" * 300]
)
def test_an_image_that_could_read_as_a_flag_is_refused(
    fake: FakeDocker, workspace: Path, image: str
) -> None:
    with pytest.raises(SandboxError, match=r"plain image reference|needs image="):
        get_backend("docker")(workspace, image=image)
    assert fake.calls("run") == []


def test_a_missing_image_is_refused_never_pulled(fake: FakeDocker, workspace: Path) -> None:
    with pytest.raises(SandboxError, match="never pulls"):
        get_backend("docker")(workspace, image="debian:12-slim")
    assert fake.calls("pull") == [] and fake.calls("run") == []


def _engine_socket_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "engine"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("source", ["/", "/run", "/var/run", "/var", "SOCKDIR", "SOCK", "COLON"])
def test_mounts_that_reach_the_host_root_are_refused(
    fake: FakeDocker,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    folder = _engine_socket_dir(tmp_path)
    sock = folder / "d.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
        monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
        colon = tmp_path / "a:b"
        colon.mkdir()
        host = {"SOCKDIR": str(folder), "SOCK": str(sock), "COLON": str(colon)}.get(source, source)
        with pytest.raises(SandboxError, match="mount source"):
            get_backend("docker")(workspace, image=IMAGE, ro_binds={host: "/host"})
    assert fake.calls("run") == []


@pytest.mark.parametrize("inside", ["/opt/x:/etc", "/opt/x,rw", "/opt/a\nb"])
def test_a_bind_target_the_volume_syntax_would_split_is_refused(
    fake: FakeDocker, workspace: Path, tmp_path: Path, inside: str
) -> None:
    with pytest.raises(SandboxError, match="--volume syntax"):
        get_backend("docker")(workspace, image=IMAGE, ro_binds={str(tmp_path): inside})
    assert fake.calls("run") == []


def test_a_tcp_endpoint_is_refused(fake: FakeDocker, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    reason = get_backend("docker").unavailable_reason()
    assert reason is not None and "not a unix socket on this host" in reason
    assert fake.calls("info") == []


@pytest.mark.parametrize(
    ("security", "refused"),
    [
        (["name=seccomp,profile=default"], False),
        (["name=seccomp,profile=unconfined"], True),
        (["name=apparmor"], True),
        ([], True),
    ],
)
def test_a_daemon_without_seccomp_is_refused(
    fake: FakeDocker, security: list[str], refused: bool
) -> None:
    fake.set(security=security)
    reason = get_backend("docker").unavailable_reason()
    assert (reason is not None and "no seccomp" in reason) if refused else reason is None


def test_a_daemon_that_does_not_answer_is_named(fake: FakeDocker) -> None:
    fake.set(info="down")
    reason = get_backend("docker").unavailable_reason()
    assert (
        reason is not None
        and "no Docker daemon answers at unix:///var/run/fake-docker.sock" in reason
    )
    assert "Cannot connect" in reason


def test_rootless_daemon_keeps_the_image_user(fake: FakeDocker, workspace: Path) -> None:
    fake.set(security=["name=seccomp,profile=default", "name=rootless"])
    with get_backend("docker")(workspace, image=IMAGE) as box:
        assert isinstance(box, DockerSandbox) and box.info().rootless
        expected = box.owner  # as root: still the sandbox user; else the image's user
        assert box.container_user() == expected


def test_container_detection_prefers_podman_and_falls_back_to_docker(
    fake: FakeDocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        get_backend("podman"), "unavailable_reason", classmethod(lambda cls: "no podman here")
    )
    assert get_backend("container") is get_backend("docker")
    fake.set(info="down")
    _forget_probes()
    with pytest.raises(SandboxError, match="podman: no podman here; docker: no Docker daemon"):
        get_backend("container")


_names = st.text(st.characters(codec="utf-8", exclude_characters="\0="), min_size=1, max_size=20)
_hostile_names = st.one_of(
    _names,
    st.sampled_from(["--privileged", "-v", "--volume", "--network", "--", "-e", "--env-file"]),
)
_values = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=40)
_dirs = st.one_of(
    st.sampled_from(["a b", "--privileged", "-v", "x\ny", "--volume=:", "--", "sub/../-w"]),
    st.text(
        st.characters(codec="utf-8", exclude_characters="\0/", min_codepoint=32),
        min_size=1,
        max_size=12,
    ).filter(lambda s: s not in (".", "..")),
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(env=st.dictionaries(_hostile_names, _values, max_size=4), folder=_dirs)
def test_hostile_inputs_add_no_flag_and_no_mount(
    env: dict[str, str], folder: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Any cwd and variables give one word each; the checked argv keeps every guarantee."""
    workspace = tmp_path_factory.mktemp("ws")
    box = object.__new__(DockerSandbox)
    box.workspace, box.ro_binds, box.owner, box.image = workspace, {}, (1000, 1000), IMAGE
    box._fs = None
    box.__dict__["info"] = lambda: EngineInfo("docker", "/usr/bin/docker", None)
    cwd = box._inner_cwd(folder)
    checked = box._check_env(env)
    argv = box.run_argv("toolproof-x", ["true"], cwd=cwd, env=checked,
                        limits=ResourceLimits(), interactive=False)  # fmt: skip
    options = _options(argv)
    check_run_argv(argv, workspace, {})
    assert f"--workdir={cwd}" in options
    assert [o for o in options if o.startswith("--volume=")] == [f"--volume={workspace}:/workspace"]
    for key, value in checked.items():
        assert f"--env={key}={value}" in options
    assert "--privileged" not in options and "--network=host" not in options
    assert all(o.startswith("--") for o in options)  # no stray value between the options
    assert argv[argv.index("--") + 1 :] == [IMAGE, "true"]
    assert sum(o.startswith("--env=") for o in options) == len(checked)


def test_the_argv_check_refuses_what_toolproof_never_writes(tmp_path: Path) -> None:
    base = ["docker", "run", *REQUIRED, f"--volume={tmp_path}:/workspace", "--", IMAGE, "true"]
    check_run_argv(base, tmp_path, {})
    for extra in ("--privileged", "--cap-add=SYS_ADMIN", "--network=host", "--volume=/:/host",
                  "--pid=host", "--user=root", "--security-opt=seccomp=unconfined"):  # fmt: skip
        with pytest.raises(SandboxError):
            check_run_argv([*base[:2], extra, *base[2:]], tmp_path, {})
    for missing in REQUIRED:
        with pytest.raises(SandboxError, match="lacks"):
            check_run_argv([w for w in base if w != missing], tmp_path, {})
    with pytest.raises(SandboxError, match="plain image"):
        check_run_argv([*base[:-2], "--privileged", "true"], tmp_path, {})


def test_docker_in_a_task_file_ranks_as_an_isolated_container_backend() -> None:
    from toolproof.spec.sandbox import SandboxSpec, effective_sandbox, unisolated_problem

    task = SandboxSpec(backend="docker", image=IMAGE)
    assert unisolated_problem(task, commands_on_host=False) is None
    assert effective_sandbox("process", None, task, commands_on_host=True).backend == "docker"
    suite = SandboxSpec(backend="process")
    assert effective_sandbox("docker", suite, None).backend == "docker"
    assert effective_sandbox(None, suite, task, commands_on_host=True).backend == "docker"
    assert get_backend("docker").isolated and issubclass(get_backend("docker"), ContainerSandbox)
