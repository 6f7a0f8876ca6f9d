"""One hidden-test run: a clean copy of a workspace, the hidden tests, the sandbox, a verdict.

Nothing of the agent's workspace is used in place. The run builds a fresh directory
from the snapshot's regular files (links, FIFOs and sockets never appear in a
snapshot's files) and the task's own initial files, writes the hidden tests and the
runner into it, and runs ``python3 -I -B`` there in the episode's sandbox backend (no
network, limits on time, memory, processes and file size). The runner's verdict line
carries a nonce only the harness and the runner know before any tested code runs;
a missing, repeated or foreign verdict, or tripwire tests with the wrong outcomes,
mean the run was tampered with.

Runs are memoised by the digest of what they run (the tree and the settings), so the
checks of an episode share one run, and the initial state of a task is run once.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolproof.sandbox import ResourceLimits, SandboxError, get_backend
from toolproof.spec import SandboxSpec, effective_sandbox
from toolproof.spec.hidden_checks import NEVER_COPIED, HiddenTestsCheck
from toolproof.tools.toolkits.shell import EpisodeShell, backend_name

from ..base import ScoringContext
from ._lintstate import matches

__all__ = [
    "RUNNER",
    "FixturesMissing",
    "HiddenRun",
    "SandboxError",
    "final_tree",
    "initial_tree",
    "modules_of",
    "run_tests",
    "settings_for",
    "tree_for",
]

RUNNER = "_toolproof_runner.py"
"""The runner's file name inside ``dir`` (the hidden tests' folder)."""
_MARK = "@@toolproof-hidden-tests@@"
_RUNNER_SOURCE = Path(__file__).with_name("_hidden_runner.py")
_OUTPUT_BYTES = 2_000_000
_MAX_FILE = 8 << 20
_CACHE: OrderedDict[str, HiddenRun] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


@dataclass
class HiddenRun:
    """What one run found.

    Attributes:
        outcomes: Test id to ``pass``, ``fail``, ``error`` or ``skip`` (tripwires left out).
        import_errors: Test module to the error that stopped its import.
        tampered: Why the run cannot be trusted, or None.
        stopped: Why the run ended without a verdict (a limit, a crash), or None.
        messages: Test id to the first lines of its failure.
        tail: The end of the run's output, for people.
    """

    outcomes: dict[str, str] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)
    tampered: str | None = None
    stopped: str | None = None
    messages: dict[str, str] = field(default_factory=dict)
    tail: str = ""


def _key(rel: str) -> str:
    return rel.removeprefix("/workspace/").lstrip("/")


class FixturesMissing(Exception):
    """The task's fixtures folder cannot be found (a problem of the task or the run)."""


def initial_tree(ctx: ScoringContext) -> dict[str, bytes]:
    """The workspace as the task starts it: ``world.fixtures`` (beside the task), then ``files``.

    Built from the task itself, never from the workspace the agent had.

    Raises:
        FixturesMissing: the task has fixtures but its folder is unknown or missing.
    """
    world = ctx.instance.task.world
    found: dict[str, bytes] = {}
    if world.fixtures:
        root = (ctx.task_dir / world.fixtures).resolve() if ctx.task_dir is not None else None
        if root is None or not root.is_dir():
            where = "the task file's folder is not known" if root is None else f"{root} is missing"
            raise FixturesMissing(f"world.fixtures {world.fixtures!r}: {where}")
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                found[path.relative_to(root).as_posix()] = path.read_bytes()
    for rel, text in world.files.items():
        found[_key(rel)] = text.encode()
    return found


def final_tree(ctx: ScoringContext, spec: HiddenTestsCheck) -> dict[str, bytes]:
    """The final workspace's files that the run takes (see :func:`agents_file`): regular
    files whose content is the snapshot's (links, FIFOs and the rest left out, unread)."""
    found: dict[str, bytes] = {}
    for rel, entry in ctx.final.files.items():
        if not entry or entry[0] is None or not agents_file(spec, rel):  # a link: never followed
            continue
        data = ctx.read_file(rel)
        if data is None or len(data) > _MAX_FILE:
            continue
        if hashlib.sha256(data).hexdigest() != entry[0]:
            continue  # not what the snapshot saw: not the agent's final state
        found[rel] = data
    return found


def _under(rel: str, folder: str) -> bool:
    return rel == folder or rel.startswith(folder + "/")


def agents_file(spec: HiddenTestsCheck, rel: str) -> bool:
    """Whether the run takes ``rel`` from the agent's workspace: a ``source`` file that is not
    a visible test, not under ``dir`` and not one of :data:`NEVER_COPIED`."""
    return (
        matches(rel, spec.source)
        and not matches(rel, NEVER_COPIED)
        and not matches(rel, spec.visible)
        and not _under(rel, spec.dir)
    )


def tree_for(
    spec: HiddenTestsCheck, initial: dict[str, bytes], final: dict[str, bytes]
) -> dict[str, bytes]:
    """The files of the run: the agent's ``source`` files, the rest as at the start, the tests.

    The visible tests come from ``initial``, nothing of the agent's lands under ``dir``
    or matches :data:`NEVER_COPIED`, and the hidden tests and the runner are written last.
    """

    def agents(rel: str) -> bool:
        return agents_file(spec, rel)

    tree = {rel: data for rel, data in initial.items() if not _under(rel, spec.dir)}
    for rel in [r for r in tree if agents(r) and r not in final]:
        del tree[rel]  # a source file the agent removed
    tree.update({rel: data for rel, data in final.items() if agents(rel)})
    for name, text in spec.files.items():
        tree[f"{spec.dir}/{name}"] = text.encode()
    tree[f"{spec.dir}/{RUNNER}"] = _RUNNER_SOURCE.read_bytes()
    return tree


def modules_of(spec: HiddenTestsCheck, tree: dict[str, bytes]) -> list[str]:
    """The test modules to run, relative paths: the visible ones, then the hidden ones."""
    visible = sorted(r for r in tree if r.endswith(".py") and matches(r, spec.visible))
    hidden = [f"{spec.dir}/{name}" for name in sorted(spec.files)]
    return [*[r for r in visible if r not in hidden], *hidden]


def _digest(tree: dict[str, bytes], modules: list[str], settings: list[object]) -> str:
    h = hashlib.sha256(json.dumps([modules, settings]).encode())
    for rel in sorted(tree):
        h.update(hashlib.sha256(rel.encode()).digest())
        h.update(hashlib.sha256(tree[rel]).digest())
    return h.hexdigest()


def settings_for(ctx: ScoringContext) -> SandboxSpec:
    """The episode's sandbox settings: those its commands ran with, else the task's."""
    shell = ctx.world.extras.get("shell")
    if isinstance(shell, EpisodeShell):
        return shell.settings
    return effective_sandbox(None, None, ctx.instance.task.sandbox)


def _write(root: Path, tree: dict[str, bytes]) -> None:
    for rel, data in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _verdict(stdout: str, nonce: str) -> tuple[dict[str, Any] | None, str | None]:
    """The runner's payload and, when the output cannot be trusted, why."""
    lines = [line for line in stdout.splitlines() if line.startswith(_MARK)]
    if not lines:
        return None, None
    if len(lines) > 1:
        return None, f"{len(lines)} verdict lines instead of one"
    _, _, rest = lines[0].partition(" ")
    given, _, text = rest.partition(" ")
    if given != nonce:
        return None, "a verdict line that the harness's runner did not write"
    try:
        payload = json.loads(text)
    except ValueError:
        return None, "a verdict line that is not JSON"
    return (payload, None) if isinstance(payload, dict) else (None, "a malformed verdict")


def _tripwires(outcomes: dict[str, str], tag: str) -> str | None:
    want = {"a": "pass", "b": "fail", "c": "error"}
    seen = {k: v for k, v in outcomes.items() if tag in k}
    wrong = []
    for suffix in ("x", "y"):
        for letter, outcome in want.items():
            hits = [v for k, v in seen.items() if k.endswith(f".test_{letter}_{tag}{suffix}")]
            if hits != [outcome]:
                wrong.append(f"{letter}{suffix}: {hits or 'missing'} instead of {outcome}")
    return "tripwire tests came out wrong (" + "; ".join(wrong) + ")" if wrong else None


def _parse(stdout: str, stderr: str, nonce: str, limit: str | None, code: int | None) -> HiddenRun:
    tail = (stdout + stderr).strip()[-800:]
    payload, tampered = _verdict(stdout, nonce)
    if tampered is not None:
        return HiddenRun(tampered=tampered, tail=tail)
    if payload is None:
        why = f"the {limit.replace('_', ' ')} limit" if limit else f"exit code {code}"
        return HiddenRun(stopped=f"the test run ended without a verdict ({why})", tail=tail)
    tag = str(payload.get("tripwire", ""))
    outcomes = {str(k): str(v) for k, v in dict(payload.get("outcomes", {})).items()}
    if tag != nonce[:12]:
        return HiddenRun(tampered="the verdict names another run's tripwires", tail=tail)
    wrong = _tripwires(outcomes, tag)
    if wrong is not None:
        return HiddenRun(tampered=wrong, tail=tail)
    return HiddenRun(
        outcomes={k: v for k, v in outcomes.items() if tag not in k},
        import_errors={str(k): str(v) for k, v in dict(payload["import_errors"]).items()},
        messages={str(k): str(v) for k, v in dict(payload.get("messages", {})).items()},
        tail=tail,
    )


def _execute(tree: dict[str, bytes], modules: list[str], spec: HiddenTestsCheck,
             settings: SandboxSpec, backend: str) -> HiddenRun:  # fmt: skip
    nonce = secrets.token_hex(16)
    cls = get_backend(backend)
    image = settings.image if cls.uses_image else None
    limits = ResourceLimits(
        wall_s=spec.timeout_s,
        cpu_s=spec.timeout_s,
        memory_mb=settings.limit("memory_mb"),
        pids=settings.limit("pids"),
        file_size_mb=settings.limit("file_size_mb"),
        workspace_mb=None,
        output_bytes=_OUTPUT_BYTES,
    )
    root = Path(tempfile.mkdtemp(prefix="toolproof-hidden-"))
    try:
        _write(root, tree)
        argv = ["python3", "-I", "-B", "-X", "utf8", f"{spec.dir}/{RUNNER}", *modules]
        env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"}
        with cls(root, image=image, ro_binds=settings.ro_binds) as box:
            done = box.exec(argv, stdin=nonce + "\n", limits=limits, env=env)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return _parse(done.stdout, done.stderr, nonce, done.limit_hit, done.exit_code)


def run_tests(
    spec: HiddenTestsCheck,
    tree: dict[str, bytes],
    settings: SandboxSpec,
    episode: dict[str, HiddenRun] | None = None,
) -> HiddenRun:
    """Run the tests of ``tree``, memoised by its digest.

    Every result is kept in ``episode`` (the episode's memo: a run that timed out is not run
    again by the episode's next check); results that did not stop early are also kept for
    the process, so the initial state of an instance runs once.

    Raises:
        SandboxError: the sandbox cannot run here (an infra problem, not the agent's).
    """
    backend = backend_name(settings)
    modules = modules_of(spec, tree)
    limits = [settings.limit(n) for n in ("memory_mb", "pids", "file_size_mb")]
    key = _digest(tree, modules, [spec.timeout_s, backend, settings.image, *limits])
    if episode is not None and key in episode:
        return episode[key]
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    found = _execute(tree, modules, spec, settings, backend)
    if episode is not None:
        episode[key] = found
    if found.tampered is None and found.stopped is None:  # a limit may be the load's
        with _LOCK:
            _CACHE[key] = found
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return found
