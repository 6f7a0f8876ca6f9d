"""One hidden run: a clean copy of a workspace, fresh interpreters in the sandbox, observations.

Nothing of the agent's workspace is used in place. The run builds a fresh directory
from the snapshot's regular files (links, FIFOs and sockets never appear in a
snapshot's files) and the task's own initial files, and runs ``python3 -c RUNNER``
there (through ``/bin/sh``, as the agent's commands run) in the episode's sandbox
backend (no network, limits on time, memory, processes and file size), with the job
(the check's ``setup`` and its cases' computations, never their expected values) on
standard input. The runner writes one JSON line per case; each is parsed here through
:func:`toolproof.trajectory.ingress.parse_json` (agent bytes) and decoded by
:func:`toolproof.spec.hidden_values.decode`. A case with no line, an unparseable,
oversized or repeated one, has no observation: it fails. When the interpreter ends early
(an exit, a crash, a limit), the case it was running fails and the cases after it run
again in a new interpreter, on a new copy of the tree, until the check's time is used up
(an interpreter gets half of what is left, at least 2 s, so one endless loop leaves time
for the cases after it).

Runs are memoised by the digest of what they run (the tree, the job and the settings),
for the episode and, when no interpreter hit a limit, for the process.
"""

from __future__ import annotations

import hashlib
import json
import shlex
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
from toolproof.spec.hidden_values import Raised, ValueFormError, decode
from toolproof.tools.toolkits.shell import EpisodeShell, backend_name
from toolproof.trajectory.ingress import IngressError, parse_json

from ..base import ScoringContext
from ._lintstate import matches

__all__ = [
    "RUNNER_SOURCE",
    "CaseRun",
    "FixturesMissing",
    "SandboxError",
    "final_tree",
    "initial_tree",
    "run_cases",
    "settings_for",
    "tree_for",
]

RUNNER_SOURCE = Path(__file__).with_name("_hidden_runner.py").read_text(encoding="utf-8")
"""The observer's text, run as ``python3 -c`` (no file of it in the sandbox)."""
_OUTPUT_BYTES = 2_000_000
_MAX_LINE = 256 * 1024
_MAX_FILE = 8 << 20
_CACHE: OrderedDict[str, CaseRun] = OrderedDict()
_CACHE_SIZE = 512
_LOCK = threading.Lock()


@dataclass
class CaseRun:
    """What the runs of one check's cases observed.

    Attributes:
        values: Case id to the decoded value it returned (a :class:`Raised` for an
            exception), for the cases that were observed.
        problems: Case id to why it has no value (the interpreter died in it, its line was
            missing, unparseable, too big or repeated, the setup failed).
        launches: Interpreters started.
        limited: Whether an interpreter ran into a limit (wall time, memory...).
        tail: The end of the last interpreter's standard error, for people.
    """

    values: dict[str, Any] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    launches: int = 0
    limited: bool = False
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


def agents_file(spec: HiddenTestsCheck, rel: str) -> bool:
    """Whether the run takes ``rel`` from the agent's workspace: a ``source`` file that is
    not one of :data:`NEVER_COPIED`."""
    return matches(rel, spec.source) and not matches(rel, NEVER_COPIED)


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


def tree_for(
    spec: HiddenTestsCheck, initial: dict[str, bytes], final: dict[str, bytes]
) -> dict[str, bytes]:
    """The files of the run: the agent's ``source`` files, every other file as at the start
    (the visible tests included); nothing matching :data:`NEVER_COPIED` from the agent."""
    tree = dict(initial)
    for rel in [r for r in tree if agents_file(spec, r) and r not in final]:
        del tree[rel]  # a source file the agent removed
    tree.update({rel: data for rel, data in final.items() if agents_file(spec, rel)})
    return tree


def settings_for(ctx: ScoringContext) -> SandboxSpec:
    """The episode's sandbox settings: those its commands ran with, else the task's."""
    shell = ctx.world.extras.get("shell")
    if isinstance(shell, EpisodeShell):
        return shell.settings
    return effective_sandbox(None, None, ctx.instance.task.sandbox)


def _digest(tree: dict[str, bytes], job: object, settings: list[object]) -> str:
    h = hashlib.sha256(json.dumps([job, settings], sort_keys=True).encode())
    for rel in sorted(tree):
        h.update(hashlib.sha256(rel.encode()).digest())
        h.update(hashlib.sha256(tree[rel]).digest())
    return h.hexdigest()


def _write(root: Path, tree: dict[str, bytes]) -> None:
    for rel, data in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _observe(line: str, waiting: set[str]) -> tuple[str, Any, str | None] | None:
    """One output line as (case id, value, problem), or None when it names no waiting case."""
    if len(line) > _MAX_LINE:
        return None
    try:
        record = parse_json(line, "hidden run output", _MAX_LINE)
    except IngressError:
        return None
    if not isinstance(record, dict) or record.get("case") not in waiting:
        return None
    case = str(record["case"])
    if "setup_error" in record:
        try:
            raised = decode({"$raised": record["setup_error"].get("$raised")}, "setup")
        except (ValueFormError, AttributeError):
            return case, None, "the setup failed"
        why = raised.type if isinstance(raised, Raised) else "?"
        return case, None, f"the setup failed: {why}: {getattr(raised, 'message', '')}"[:300]
    if "too_big" in record:
        return case, None, "its value is too big to report"
    if "value" not in record:
        return None
    try:
        return case, decode(record["value"], f"case {case!r}"), None
    except ValueFormError as exc:
        return case, None, f"its value is malformed ({exc})"[:300]


def _read(stdout: str, cases: list[str], run: CaseRun) -> str | None:
    """Record the observations of one interpreter; the last case it started and left
    unobserved (the one it died in), or None."""
    waiting = set(cases)
    seen: set[str] = set()
    started: str | None = None
    for line in stdout.split("\n"):  # only \n ends a line (not \x85 or \u2028)
        if line.startswith('{"start"'):
            try:
                record = parse_json(line, "hidden run output", 1000)
            except IngressError:
                continue
            if isinstance(record, dict) and record.get("start") in waiting:
                started = str(record["start"])
            continue
        found = _observe(line, waiting)
        if found is None:
            continue
        case, value, problem = found
        if case in seen:
            run.values.pop(case, None)
            run.problems[case] = "it was reported twice"
            continue
        seen.add(case)
        if problem is not None:
            run.problems[case] = problem
        else:
            run.values[case] = value
    dead = [c for c in cases if c not in seen]
    return started if started in dead else (dead[0] if dead else None)


def _launch(
    tree: dict[str, bytes], job: dict[str, Any], limits: ResourceLimits,
    settings: SandboxSpec, backend: str,
) -> Any:  # fmt: skip
    cls = get_backend(backend)
    image = settings.image if cls.uses_image else None
    root = Path(tempfile.mkdtemp(prefix="toolproof-hidden-"))
    try:
        _write(root, tree)
        # a command line run by /bin/sh, like the agent's own commands (same environment)
        command = "python3 -c " + shlex.quote(RUNNER_SOURCE)
        with cls(root, image=image, ro_binds=settings.ro_binds) as box:
            return box.exec(command, stdin=json.dumps(job), limits=limits, env=settings.env)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _execute(
    spec: HiddenTestsCheck, tree: dict[str, bytes], settings: SandboxSpec, backend: str
) -> CaseRun:
    run = CaseRun()
    pending = [c.id for c in spec.cases()]
    by_id = {c.id: c.job() for c in spec.cases()}
    budget = spec.timeout_s
    while pending:
        if budget <= 0.05:
            for case in pending:
                run.problems[case] = "not run: the check's time was used up"
            break
        wall = min(budget, max(2.0, budget / 2))  # a loop leaves time for the cases after it
        limits = ResourceLimits(
            wall_s=wall,
            cpu_s=wall,
            memory_mb=settings.limit("memory_mb"),
            pids=settings.limit("pids"),
            file_size_mb=settings.limit("file_size_mb"),
            workspace_mb=None,
            output_bytes=_OUTPUT_BYTES,
        )
        job = {"setup": spec.setup, "cases": [by_id[c] for c in pending]}
        done = _launch(tree, job, limits, settings, backend)
        run.launches += 1
        run.limited = run.limited or done.limit_hit is not None
        run.tail = done.stderr.strip()[-800:]
        budget -= max(done.duration_s, 0.05)
        died_in = _read(done.stdout, pending, run)
        if died_in is None:
            break
        how = (
            f"the {done.limit_hit.replace('_', ' ')} limit"
            if done.limit_hit
            else f"exit code {done.exit_code}"
        )
        run.problems[died_in] = f"the interpreter ended in this case ({how})"
        cut = pending.index(died_in)
        for case in pending[:cut]:
            if case not in run.values and case not in run.problems:
                run.problems[case] = "its observation was missing or unreadable"
        observed = set(run.values) | set(run.problems)
        pending = [c for c in pending[cut + 1 :] if c not in observed]
    return run


def run_cases(
    spec: HiddenTestsCheck,
    tree: dict[str, bytes],
    settings: SandboxSpec,
    episode: dict[str, CaseRun] | None = None,
) -> CaseRun:
    """Observe the cases of ``spec`` on ``tree``, memoised by digest.

    Every result is kept in ``episode`` (the episode's memo); results where no interpreter
    hit a limit are also kept for the process, so the same tree runs once.

    Raises:
        SandboxError: the sandbox cannot run here (an infra problem, not the agent's).
    """
    backend = backend_name(settings)
    job = {"setup": spec.setup, "cases": [c.job() for c in spec.cases()]}
    limits = [settings.limit(n) for n in ("memory_mb", "pids", "file_size_mb")]
    env = sorted((settings.env or {}).items())
    key = _digest(tree, job, [spec.timeout_s, backend, settings.image, env, *limits])
    if episode is not None and key in episode:
        return episode[key]
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    found = _execute(spec, tree, settings, backend)
    if episode is not None:
        episode[key] = found
    if not found.limited:  # a limit may be the machine's load
        with _LOCK:
            _CACHE[key] = found
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return found
